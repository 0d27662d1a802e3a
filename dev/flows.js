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
    .map((f) => ({ name: f.slice(0, -'.json'.length), nodes: JSON.parse(readFileSync(path.join(examplesDir, f), 'utf8')) }))
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
        const same = existing && isDeepStrictEqual(existing, node)
          ? existing
          : merged.find((m) => isConfigNode(m) && m.type === node.type && isDeepStrictEqual(withoutId(m), withoutId(node)))
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

module.exports = { CONFIG_TYPE, readExamples, mergeExamples, pointAtBroker }
