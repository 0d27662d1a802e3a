// Turns the example flows (examples/*.json, each an array of Node-RED nodes as the Import menu
// reads them) into one flow file for `npm start`, and points their state-store config nodes at a
// broker. Shared by scripts/start.mjs and the smoke test so both deploy the examples the same way.
'use strict'
const { createHash } = require('node:crypto')
const { readFileSync, readdirSync } = require('node:fs')
const path = require('node:path')
const { isDeepStrictEqual } = require('node:util')

const CONFIG_TYPE = 'ss-config'

/** The example files of a package folder, sorted by name: [{ name, nodes }]. */
function readExamples(examplesDir) {
  return readdirSync(examplesDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({
      name: f.slice(0, -'.json'.length),
      nodes: JSON.parse(readFileSync(path.join(examplesDir, f), 'utf8')),
    }))
}

// Ids derived from the file and the old id, so seeding the same examples twice gives the same flow file.
function derivedId(name, oldId) {
  return createHash('sha256').update(`${name}\0${oldId}`).digest('hex').slice(0, 16)
}

// Node-RED refers to other nodes by id from many properties (z, wires, links, scope, config
// fields of any name), so a rename replaces every string that equals an id.
function renameIds(value, renames) {
  if (typeof value === 'string') return renames.has(value) ? renames.get(value) : value
  if (Array.isArray(value)) return value.map((v) => renameIds(v, renames))
  if (value !== null && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) out[k] = renameIds(v, renames)
    return out
  }
  return value
}

function isConfigNode(node) {
  return node.type !== 'tab' && node.type !== 'subflow' && !node.z && !Array.isArray(node.wires)
}

function withoutId(node) {
  const { id: _id, ...rest } = node
  return rest
}

/**
 * One flow file from several examples: one tab per example (a tab is added, labelled with the
 * file name, when the example was exported without one), identical config nodes kept once (the
 * examples share one ss-config), and any other id clash renamed.
 */
function mergeExamples(examples) {
  const merged = []
  const byId = new Map()
  for (const { name, nodes } of examples) {
    if (!Array.isArray(nodes)) throw new Error(`example ${name} is not an array of nodes`)
    const containers = new Set(nodes.filter((n) => n.type === 'tab' || n.type === 'subflow').map((n) => n.id))
    let list = nodes.map((n) => ({ ...n }))
    if (!nodes.some((n) => n.type === 'tab')) {
      const tab = { id: derivedId(name, 'tab'), type: 'tab', label: name, disabled: false, info: '' }
      for (const node of list) if (node.z && !containers.has(node.z)) node.z = tab.id
      list.unshift(tab)
    }

    const renames = new Map()
    const keep = []
    for (const node of list) {
      const existing = byId.get(node.id)
      if (isConfigNode(node)) {
        const same =
          existing && isDeepStrictEqual(existing, node)
            ? existing
            : merged.find(
                (m) => isConfigNode(m) && m.type === node.type && isDeepStrictEqual(withoutId(m), withoutId(node)),
              )
        if (same) {
          if (same.id !== node.id) renames.set(node.id, same.id)
          continue
        }
      }
      if (existing) renames.set(node.id, derivedId(name, node.id))
      keep.push(node)
    }
    for (const node of renameIds(keep, renames)) {
      if (byId.has(node.id)) throw new Error(`example ${name}: node id ${node.id} clashes after renaming`)
      byId.set(node.id, node)
      merged.push(node)
    }
  }
  return merged
}

/** Copies of the nodes with every state-store config node's broker URL replaced. */
function pointAtBroker(nodes, brokerUrl, configType = CONFIG_TYPE) {
  return nodes.map((n) => (n.type === configType ? { ...n, broker: brokerUrl } : n))
}

/** Whether an inject node fires with no press: once at deploy, at an interval or at times of day. */
function firesByItself(n) {
  return n.once === true || Boolean(n.repeat) || Boolean(n.crontab)
}

/**
 * The examples as `npm start` deploys them: quiet. Their inject-once nodes would fire at every
 * deploy (a full deploy restarts them), some fourteen msgs mixed into the user's own in Debug, and a
 * repeating inject would go on filling it; here they wait for a press, and a first tab says so and
 * which button starts each example.
 */
function quietExamples(nodes) {
  const labels = new Map(nodes.filter((n) => n.type === 'tab').map((t) => [t.id, t.label]))
  const starters = new Map()
  const quiet = nodes.map((n) => {
    if (n.type !== 'inject' || !firesByItself(n)) return n
    const list = starters.get(n.z) ?? []
    list.push(`**${n.name || n.id}**`)
    starters.set(n.z, list)
    return { ...n, once: false, repeat: '', crontab: '' }
  })
  const lines = [...starters].map(([z, names]) => `- *${labels.get(z) ?? z}*: ${names.join(', then ')}`)
  const info = [
    'Each of the following tabs is one example from Import → Examples → node-red-contrib-aio-statestore, with a comment that explains it.',
    '',
    'Here nothing fires at deploy, so the Debug sidebar shows only what you ask for. Press an inject button (the square on its left) to run an example; these start them:',
    '',
    ...lines,
    '',
    "The leader election needs no button: it campaigns by itself when it starts (that is what it shows). Its msg reaches Debug before the editor opens, so its *leader* debug node also shows who leads under the node itself. Imported from the menu into your own flows, the examples press these buttons by themselves: once at deploy, or at the interval or time of day the button shows (a tick every 5 s, a daily job at 06:00); each example's comment names its buttons too.",
    '',
    'To silence an example completely, disable its tab (double-click the tab, Enabled off) or delete it. To get them all back: stop npm start, delete flows.json in its user directory (.node-red/), start again.',
  ].join('\n')
  // The text is the tab's description (the Info sidebar shows it while the tab is open) and the comment's.
  const tab = { id: derivedId('about', 'tab'), type: 'tab', label: 'About these examples', disabled: false, info }
  const comment = {
    id: derivedId('about', 'comment'),
    type: 'comment',
    z: tab.id,
    name: 'Start here: these examples are quiet until you press their buttons',
    info,
    x: 300,
    y: 60,
    wires: [],
  }
  return [tab, comment, ...quiet]
}

module.exports = { CONFIG_TYPE, readExamples, mergeExamples, pointAtBroker, quietExamples, firesByItself }
