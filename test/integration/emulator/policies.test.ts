/**
 * The cluster's policies in the emulator, as pure decisions and as files: BrokerAuthorization rules
 * (principals by client id, user name and attributes; Connect, Publish, Subscribe; state store keys
 * by Pattern, String and Binary with substitutions), the Broker's state store persistence policy,
 * and the file reader's errors (file, line, field). The glob and substitution matching is checked
 * against a straightforward backtracking reference with fast-check.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { StateStoreClient } from '../../../src/client'
import { ServiceError } from '../../../src/diagnostics/errors'
import { startEmulator } from '../../../src/emulator'
import { RemoteEmulatorAdmin } from '../../../src/emulator/admin/client'
import { AuthorizationPolicy } from '../../../src/emulator/core/authorization-policy'
import { KeyPattern } from '../../../src/emulator/core/key-pattern'
import { Fields } from '../../../src/emulator/core/resource-error'
import { Reply, Request } from '../../../src/protocol'
import { RawClient } from './raw-client'
import type { Principal } from '../../../src/emulator/core/principal'
import { TopicTemplate } from '../../../src/emulator/core/topic-filter'
import { readAuthorizationFile, readBrokerConfigFile, ResourceFileError } from '../../../src/emulator/resource-file'

const latin1 = (text: string | Buffer) =>
  (typeof text === 'string' ? Buffer.from(text, 'utf8') : text).toString('latin1')

// ---- the reference: pattern text → items → backtracking over the key's bytes ----

type Item = { lit: number } | { any: true } | { one: true } | { set: Array<[number, number]>; negate: boolean }

function referenceItems(pattern: string, p: Principal): Item[] | null {
  const items: Item[] = []
  let i = 0
  const literal = (text: string) => {
    for (const b of Buffer.from(text, 'utf8')) items.push({ lit: b })
  }
  while (i < pattern.length) {
    if (pattern[i] === '{') {
      const end = pattern.indexOf('}', i)
      const name = pattern.slice(i + 1, end)
      const value =
        name === 'principal.clientId'
          ? p.clientId
          : name === 'principal.username'
            ? p.username
            : name.startsWith('principal.attributes.')
              ? p.attributes?.[name.slice(21)]
              : undefined
      // A value that could reach past its place (a `/`) or is empty matches nothing; glob characters match themselves (AIO 2606).
      if (value === undefined || value === '' || value.includes('/')) return null
      literal(value)
      i = end + 1
    } else if (pattern[i] === '*') {
      items.push({ any: true })
      i++
    } else if (pattern[i] === '?') {
      items.push({ one: true })
      i++
    } else if (pattern[i] === '[') {
      let j = i + 1
      const negate = pattern[j] === '!' || pattern[j] === '^'
      if (negate) j++
      const set: Array<[number, number]> = []
      let first = true
      while (pattern[j] !== ']' || first) {
        first = false
        if (pattern[j + 1] === '-' && pattern[j + 2] !== ']') {
          set.push([pattern.charCodeAt(j), pattern.charCodeAt(j + 2)])
          j += 3
        } else {
          set.push([pattern.charCodeAt(j), pattern.charCodeAt(j)])
          j++
        }
      }
      items.push({ set, negate })
      i = j + 1
    } else {
      literal(pattern[i]!)
      i++
    }
  }
  return items
}

function referenceMatch(pattern: string, key: Buffer, p: Principal): boolean {
  const items = referenceItems(pattern, p)
  if (!items) return false
  const at = (ii: number, ki: number): boolean => {
    if (ii === items.length) return ki === key.length
    const item = items[ii]!
    if ('any' in item) {
      for (let k = ki; k <= key.length; k++) if (at(ii + 1, k)) return true
      return false
    }
    if (ki >= key.length) return false
    const b = key[ki]!
    if ('one' in item) return at(ii + 1, ki + 1)
    if ('lit' in item) return b === item.lit && at(ii + 1, ki + 1)
    return item.set.some(([lo, hi]) => b >= lo && b <= hi) !== item.negate && at(ii + 1, ki + 1)
  }
  return at(0, 0)
}

// ---- generators ----

const PATTERN_PARTS = [
  'a',
  'b',
  'c',
  '/',
  '1',
  '5',
  'é',
  '*',
  '?',
  '[a-c]',
  '[!b]',
  '[^a]',
  '[0-9]',
  '[]a]',
  '{principal.clientId}',
  '{principal.username}',
  '{principal.attributes.city}',
]
const VALUE_PARTS = ['a', 'b', '*', '?', '[', ']', '/', '1', 'é', '-']
const KEY_PARTS = ['a', 'b', 'c', '/', '1', '5', '9', 'é', '*', '?', '[', ']', 'x']

const value = fc.array(fc.constantFrom(...VALUE_PARTS), { maxLength: 4 }).map((parts) => parts.join(''))
const principal: fc.Arbitrary<Principal> = fc.record(
  { clientId: value, username: value, attributes: fc.option(fc.record({ city: value }), { nil: undefined }) },
  { requiredKeys: ['clientId'] },
)
const pattern = fc.array(fc.constantFrom(...PATTERN_PARTS), { maxLength: 7 }).map((parts) => parts.join(''))
const randomKey = fc
  .array(fc.constantFrom(...KEY_PARTS), { maxLength: 8 })
  .map((parts) => Buffer.from(parts.join(''), 'utf8'))

/** A key made to match the pattern (before mutation), so that matches are common. */
function instantiate(p: string, who: Principal, fill: string[]): Buffer {
  const items = referenceItems(p, who) ?? []
  const bytes: number[] = []
  let n = 0
  const next = () => fill[n++ % fill.length] ?? 'a'
  for (const item of items) {
    if ('lit' in item) bytes.push(item.lit)
    else if ('any' in item) bytes.push(...Buffer.from(next().repeat(n % 3)))
    else if ('one' in item) bytes.push(Buffer.from(next())[0]!)
    else bytes.push(item.negate ? 0x7a : item.set[0]![0])
  }
  return Buffer.from(bytes)
}

const keyFor = (p: string, who: Principal) =>
  fc.oneof(
    randomKey,
    fc.array(fc.constantFrom(...KEY_PARTS), { minLength: 1, maxLength: 4 }).map((fill) => instantiate(p, who, fill)),
    fc
      .tuple(
        fc.array(fc.constantFrom(...KEY_PARTS), { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.constantFrom(...KEY_PARTS),
      )
      .map(([fill, at, ch]) => {
        const k = instantiate(p, who, fill)
        const i = k.length === 0 ? 0 : at % k.length
        return Buffer.concat([k.subarray(0, i), Buffer.from(ch), k.subarray(i + 1)])
      }),
  )

describe('emulator policies', () => {
  describe('key patterns against a reference (fast-check)', () => {
    it('a Pattern key with *, ?, sets, ranges and substitutions matches exactly the keys the reference matches', () => {
      fc.assert(
        fc.property(
          pattern.chain((p) => principal.chain((who) => fc.tuple(fc.constant(p), fc.constant(who), keyFor(p, who)))),
          ([p, who, key]) => {
            const compiled = new KeyPattern('Pattern', p, { substitutions: true })
            assert.equal(
              compiled.matches(latin1(key), who),
              referenceMatch(p, key, who),
              `pattern ${p} key ${JSON.stringify(key.toString())} principal ${JSON.stringify(who)}`,
            )
          },
        ),
        { numRuns: 3000 },
      )
    })

    it('the compiled pattern is reused across principals without mixing their values up', () => {
      fc.assert(
        fc.property(pattern, fc.array(fc.tuple(principal, randomKey), { minLength: 2, maxLength: 8 }), (p, cases) => {
          const compiled = new KeyPattern('Pattern', p, { substitutions: true })
          for (const [who, key] of cases) assert.equal(compiled.matches(latin1(key), who), referenceMatch(p, key, who))
          for (const [who] of cases) {
            const own = instantiate(p, who, ['a'])
            assert.equal(compiled.matches(latin1(own), who), referenceMatch(p, own, who))
          }
        }),
        { numRuns: 1000 },
      )
    })

    it('a String key matches only itself, byte for byte, * and braces included', () => {
      fc.assert(
        fc.property(fc.string({ maxLength: 8 }), randomKey, principal, (text, other, who) => {
          const compiled = new KeyPattern('String', text, { substitutions: true })
          assert.equal(compiled.matches(latin1(text), who), true)
          assert.equal(compiled.matches(latin1(other), who), Buffer.from(text, 'utf8').equals(other))
        }),
      )
    })

    it('a Binary key matches only its bytes', () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }), (bytes, other) => {
          const compiled = new KeyPattern('Binary', Buffer.from(bytes).toString('base64'), { substitutions: false })
          assert.equal(compiled.matches(latin1(Buffer.from(bytes))), true)
          assert.equal(compiled.matches(latin1(Buffer.from(other))), Buffer.from(bytes).equals(Buffer.from(other)))
        }),
      )
    })
  })

  describe('principal names against a reference (fast-check)', () => {
    /** `*` any characters, `?` one, the rest literal: backtracking over code points. */
    function referenceName(glob: string, name: string): boolean {
      const g = [...glob]
      const n = [...name]
      const at = (gi: number, ni: number): boolean => {
        if (gi === g.length) return ni === n.length
        if (g[gi] === '*') return at(gi + 1, ni) || (ni < n.length && at(gi, ni + 1))
        return ni < n.length && (g[gi] === '?' || g[gi] === n[ni]) && at(gi + 1, ni + 1)
      }
      return at(0, 0)
    }
    const text = (parts: string[]) => fc.array(fc.constantFrom(...parts), { maxLength: 6 }).map((p) => p.join(''))

    it('a clientIds or usernames entry matches exactly the names the reference matches', () => {
      fc.assert(
        fc.property(
          text(['a', 'b', '-', '.', 'é', '*', '?', '[']),
          text(['a', 'b', '-', '.', 'é', '*', '?', '[']),
          (glob, name) => {
            const policy = AuthorizationPolicy.compile([
              {
                value: {
                  rules: [
                    { principals: { clientIds: [glob], usernames: [glob] }, brokerResources: [{ method: 'Connect' }] },
                  ],
                },
                fields: new Fields(0, []),
              },
            ])
            const expected = referenceName(glob, name)
            assert.equal(policy.decideConnect({ clientId: name }).allowed, expected, `clientIds ${glob} ${name}`)
            assert.equal(
              policy.decideConnect({ clientId: '\u0000', username: name }).allowed,
              expected || referenceName(glob, '\u0000'),
              `usernames ${glob} ${name}`,
            )
          },
        ),
        { numRuns: 3000 },
      )
    })
  })

  describe('topic templates against a reference (fast-check)', () => {
    const level = fc.constantFrom('a', 'b', '{principal.clientId}', '{principal.username}')
    const filterOf = fc
      .tuple(fc.array(fc.oneof(level, fc.constant('+')), { minLength: 1, maxLength: 4 }), fc.boolean())
      .map(([levels, hash]) => [...levels, ...(hash ? ['#'] : [])].join('/'))
    const who = fc.record({
      clientId: fc.constantFrom('a', 'c', 'x/y', '+', ''),
      username: fc.constantFrom('b', 'u', '#'),
    })
    const topic = fc
      .array(fc.constantFrom('a', 'b', 'c', 'u', 'x', 'y'), { minLength: 1, maxLength: 6 })
      .map((l) => l.join('/'))

    /** Substitute, refuse values that are empty or hold /, + or #, then match level by level. */
    function referenceTopic(filter: string, p: { clientId: string; username: string }, t: string): boolean {
      const values = [p.clientId, p.username]
      if (filter.includes('{principal.clientId}') && (values[0] === '' || /[/+#]/.test(values[0]!))) return false
      if (filter.includes('{principal.username}') && (values[1] === '' || /[/+#]/.test(values[1]!))) return false
      const f = filter
        .replaceAll('{principal.clientId}', p.clientId)
        .replaceAll('{principal.username}', p.username)
        .split('/')
      const levels = t.split('/')
      for (let i = 0; i < f.length; i++) {
        if (f[i] === '#') return true
        if (i >= levels.length || (f[i] !== '+' && f[i] !== levels[i])) return false
      }
      return f.length === levels.length
    }

    it('a Publish topic is allowed exactly when the substituted filter matches it', () => {
      fc.assert(
        fc.property(filterOf, who, topic, (filter, p, t) => {
          assert.equal(new TopicTemplate(filter).allowsTopic(p, t), referenceTopic(filter, p, t))
        }),
        { numRuns: 2000 },
      )
    })

    it('a Subscribe filter is granted only when every topic it matches is allowed', () => {
      fc.assert(
        fc.property(
          filterOf,
          who,
          fc.array(fc.constantFrom('a', 'b', 'c', 'u', '+'), { minLength: 1, maxLength: 5 }),
          fc.array(topic, { maxLength: 20 }),
          (granted, p, asked, topics) => {
            const requested = asked.join('/')
            if (new TopicTemplate(granted).coversFilter(p, requested)) {
              for (const t of topics)
                if (referenceTopic(requested, p, t))
                  assert.ok(referenceTopic(granted, p, t), `${requested} granted by ${granted} but ${t} is not`)
            }
            if (referenceTopic(granted, p, requested) && !requested.includes('+'))
              assert.ok(new TopicTemplate(granted).coversFilter(p, requested))
          },
        ),
        { numRuns: 2000 },
      )
    })
  })

  describe('BrokerAuthorization files', () => {
    let dir: string
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'emu-policies-'))
    })
    after(() => rmSync(dir, { recursive: true, force: true }))
    const file = (name: string, text: string) => {
      const path = join(dir, name)
      writeFileSync(path, text)
      return path
    }

    const RESOURCE = `apiVersion: mqttbroker.iotoperations.azure.com/v1
kind: BrokerAuthorization
metadata:
  name: plant-policy
  namespace: azure-iot-operations
spec:
  authorizationPolicies:
    cache: Enabled
    rules:
      - principals:
          clientIds: ["sensor-*"]
          attributes:
            - { city: seattle, floor: "2" }
        brokerResources:
          - method: Connect
          - method: Publish
            topics: ["telemetry/{principal.clientId}"]
          - method: Subscribe
            topics: ["commands/{principal.attributes.city}/#"]
        stateStoreResources:
          - method: Read
            keyType: pattern
            keys: ["config[0-9]"]
          - method: ReadWrite
            keyType: Pattern
            keys: ["sensors/{principal.clientId}/*"]
      - principals:
          usernames: ["ops"]
        brokerResources:
          - method: Connect
        stateStoreResources:
          - method: Write
            keyType: string
            keys: ["literal*"]
          - method: Read
            keyType: Binary
            keys: ["AP8="]
`

    it('reads the resource as applied and decides by client id, user name and attributes, naming the rule', () => {
      const policy = readAuthorizationFile(file('authz.yaml', RESOURCE))
      const sensor = { clientId: 'sensor-7' }
      assert.deepEqual(policy.decideKey(sensor, 'read', 'config3'), {
        allowed: true,
        rule: 'plant-policy rules[0].stateStoreResources[0] Read Pattern ("config[0-9]")',
      })
      assert.equal(policy.decideKey(sensor, 'read', 'configX').allowed, false)
      assert.equal(policy.decideKey(sensor, 'write', 'config3').allowed, false)
      assert.equal(policy.decideKey(sensor, 'write', 'sensors/sensor-7/t').allowed, true)
      assert.equal(policy.decideKey(sensor, 'write', 'sensors/sensor-8/t').allowed, false)
      const ops = { clientId: 'laptop', username: 'ops' }
      assert.equal(policy.decideKey(ops, 'write', 'literal*').allowed, true)
      assert.equal(policy.decideKey(ops, 'write', 'literally').allowed, false)
      assert.equal(policy.decideKey(ops, 'read', latin1(Buffer.from([0x00, 0xff]))).allowed, true)
      assert.deepEqual(policy.decideConnect({ clientId: 'nobody' }), { allowed: false, rule: null })
      assert.equal(policy.decideConnect(ops).allowed, true)
      // Attributes: every entry of one map must match.
      const badge = { clientId: 'cam', attributes: { city: 'seattle', floor: '2' } }
      assert.equal(policy.decideConnect(badge).allowed, true)
      assert.equal(
        policy.decideConnect({ clientId: 'cam', attributes: { city: 'seattle', floor: '3' } }).allowed,
        false,
      )
      assert.equal(policy.decideSubscribe(badge, 'commands/seattle/+').allowed, true)
      assert.equal(policy.decideSubscribe(badge, 'commands/paris/x').allowed, false)
      assert.equal(policy.decidePublish(sensor, 'telemetry/sensor-7').allowed, true)
      assert.equal(policy.decidePublish(sensor, 'telemetry/sensor-8').allowed, false)
      assert.equal(policy.grantsBrokerResources, true)
    })

    it('takes JSON, several documents, the bare authorizationPolicies object and a list of rules as one schema', () => {
      const other = `apiVersion: mqttbroker.iotoperations.azure.com/v1\nkind: Broker\nmetadata: { name: default }\nspec: { persistence: { maxSize: 1Gi } }\n`
      const two = readAuthorizationFile(
        file('two.yaml', `${other}---\n${RESOURCE}---\n${RESOURCE.replace('plant-policy', 'second')}`),
      )
      assert.equal(two.ruleCount, 4)
      const json = readAuthorizationFile(
        file(
          'authz.json',
          JSON.stringify({
            rules: [{ principals: { clientIds: ['x'] }, stateStoreResources: [{ method: 'Read', keys: ['*'] }] }],
          }),
        ),
      )
      assert.equal(json.decideKey({ clientId: 'x' }, 'read', 'any').allowed, true)
      assert.equal(json.grantsBrokerResources, false)
      const list = readAuthorizationFile(
        file(
          'list.json',
          JSON.stringify([
            { principals: { clientIds: ['x'] }, stateStoreResources: [{ method: 'Write', keys: ['k'] }] },
          ]),
        ),
      )
      assert.equal(list.decideKey({ clientId: 'x' }, 'write', 'k').allowed, true)
    })

    const refusal = (text: string, pattern: RegExp) => {
      const path = file('bad.yaml', text)
      assert.throws(
        () => readAuthorizationFile(path),
        (err: unknown) => err instanceof ResourceFileError && err.file === path && pattern.test(err.message),
      )
    }

    it('stops on a bad file with the file, the line, the field that names the rule, and what is wrong', () => {
      refusal(
        RESOURCE.replace('method: Read\n            keyType: pattern', 'method: Reed\n            keyType: pattern'),
        /bad\.yaml:21: spec\.authorizationPolicies\.rules\[0\]\.stateStoreResources\[0\]\.method: must be one of Read, Write, ReadWrite, not "Reed"/,
      )
      refusal(
        RESOURCE.replace('keyType: string', 'keyType: Text'),
        /:33: .*rules\[1\]\.stateStoreResources\[0\]\.keyType: must be Pattern, String or Binary/,
      )
      refusal(
        RESOURCE.replace('config[0-9]', 'config[0-9'),
        /rules\[0\]\.stateStoreResources\[0\]\.keys\[0\]: "\[" at position 6 is not closed/,
      )
      refusal(
        RESOURCE.replace('{principal.clientId}/*', '{principal.clientid}/*'),
        /keys\[0\]: \{principal\.clientid\} is not a substitution/,
      )
      refusal(RESOURCE.replace('AP8=', 'not base64!'), /keys\[0\]: a Binary key must be base64/)
      refusal(
        RESOURCE.replace(
          'stateStoreResources:\n          - method: Read',
          'stateStoreResource:\n          - method: Read',
        ),
        /rules\[0\]\.stateStoreResource: unknown field/,
      )
      refusal(
        RESOURCE.replace('topics: ["telemetry/{principal.clientId}"]', 'topics: ["telemetry/#/x"]'),
        /topics\[0\]: "#" must be a whole level, the last one/,
      )
      refusal(RESOURCE.replace('usernames: ["ops"]', 'nicknames: ["ops"]'), /principals\.nicknames: unknown field/)
      refusal(RESOURCE.replace('mqttbroker.iotoperations.azure.com/v1', 'v1'), /:1: apiVersion: must be mqttbroker/)
      refusal('rules: [ { principals: ', /is not valid YAML or JSON/)
      refusal('kind: ConfigMap\n', /no BrokerAuthorization resource/)
      assert.throws(() => readAuthorizationFile(join(dir, 'missing.yaml')), /missing\.yaml: cannot be read \(ENOENT\)/)
    })
  })

  describe('Broker persistence files', () => {
    let dir: string
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'emu-persist-policy-'))
    })
    after(() => rmSync(dir, { recursive: true, force: true }))
    const broker = (persistence: string) => {
      const path = join(dir, 'broker.yaml')
      writeFileSync(
        path,
        `apiVersion: mqttbroker.iotoperations.azure.com/v1\nkind: Broker\nmetadata:\n  name: default\nspec:\n  persistence:\n    maxSize: 10GiB\n${persistence}`,
      )
      return path
    }
    const none = () => undefined

    it('Custom: the listed keys, and with dynamic Enabled the keys SET with the dynamic property', () => {
      const policy = readBrokerConfigFile(
        broker(
          `    dynamicSettings:\n      userPropertyKey: keep\n      userPropertyValue: "yes"\n    stateStore:\n      mode: Custom\n      stateStoreSettings:\n        stateStoreResources:\n          - keyType: Pattern\n            keys: ["config/*", "unit[0-9]"]\n          - keyType: binary\n            keys: ["AAE="]\n        dynamic:\n          mode: Enabled\n`,
        ),
      )
      assert.deepEqual(policy.decide('config/a', none), {
        persist: true,
        rule: 'stateStoreResources[0] Pattern "config/*"',
      })
      assert.equal(policy.decide('unit7', none).persist, true)
      assert.equal(policy.decide('unitX', none).persist, false)
      assert.equal(policy.decide(latin1(Buffer.from([0, 1])), none).persist, true)
      assert.deepEqual(
        policy.decide('other', (n) => (n === 'keep' ? 'yes' : undefined)),
        { persist: true, rule: 'the user property keep=yes' },
      )
      assert.equal(policy.decide('other', (n) => (n === 'aio-persistence' ? 'true' : undefined)).persist, false)
    })

    it('Custom with dynamic Disabled ignores the property; All keeps every key; None keeps none', () => {
      const asked = (n: string) => (n === 'aio-persistence' ? 'true' : undefined)
      const disabled = readBrokerConfigFile(
        broker(
          `    stateStore:\n      mode: Custom\n      stateStoreSettings:\n        stateStoreResources: [{ keyType: String, keys: ["a*"] }]\n        dynamic: { mode: Disabled }\n`,
        ),
      )
      assert.equal(disabled.decide('other', asked).persist, false)
      assert.equal(disabled.decide('a*', none).persist, true)
      assert.equal(disabled.decide('ab', none).persist, false)
      assert.deepEqual(readBrokerConfigFile(broker(`    stateStore: { mode: All }\n`)).decide('x', none), {
        persist: true,
        rule: 'mode All',
      })
      assert.equal(readBrokerConfigFile(broker(`    stateStore: { mode: None }\n`)).decide('x', asked).persist, false)
      // No stateStore policy: the dynamic property alone, as the emulator always did.
      assert.equal(readBrokerConfigFile(broker('')).decide('x', asked).persist, true)
    })

    it('stops on a bad policy with the file, the line and the field', () => {
      assert.throws(
        () => readBrokerConfigFile(broker(`    stateStore:\n      mode: Some\n`)),
        /broker\.yaml:9: spec\.persistence\.stateStore\.mode: must be one of None, All, Custom, not "Some"/,
      )
      assert.throws(
        () =>
          readBrokerConfigFile(
            broker(
              `    stateStore:\n      mode: Custom\n      stateStoreSettings:\n        stateStoreResources: [{ keys: ["{principal.clientId}"] }]\n`,
            ),
          ),
        /stateStoreResources\[0\]\.keys\[0\]: a \{principal\.…\} substitution has no meaning here/,
      )
      assert.throws(
        () => readBrokerConfigFile(broker(`    stateStore: { mode: All, stateStoreSettings: {} }\n`)),
        /stateStoreSettings: applies to mode Custom only/,
      )
    })
  })

  describe('the key inspector (admin channel)', () => {
    it('says by which rule a key is persisted, and what a client may do with it by which rule', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'emu-inspect-'))
      const auth = join(dir, 'authz.yaml')
      const brokerConfig = join(dir, 'broker.yaml')
      writeFileSync(
        auth,
        `kind: BrokerAuthorization\napiVersion: mqttbroker.iotoperations.azure.com/v1\nmetadata: { name: p }\nspec:\n  authorizationPolicies:\n    rules:\n      - principals: { clientIds: [w] }\n        brokerResources: [{ method: Connect }, { method: Subscribe, topics: ["#"] }]\n        stateStoreResources:\n          - { method: ReadWrite, keys: ["cfg/*", "free"] }\n      - principals: { clientIds: [r] }\n        brokerResources: [{ method: Connect }]\n        stateStoreResources:\n          - { method: Read, keys: ["cfg/*"] }\n`,
      )
      writeFileSync(
        brokerConfig,
        `kind: Broker\napiVersion: mqttbroker.iotoperations.azure.com/v1\nspec:\n  persistence:\n    maxSize: 1GiB\n    stateStore:\n      mode: Custom\n      stateStoreSettings:\n        stateStoreResources: [{ keyType: Pattern, keys: ["cfg/*"] }]\n        dynamic: { mode: Enabled }\n`,
      )
      const emulator = await startEmulator({
        listen: { port: 0 },
        admin: true,
        authorizationFile: auth,
        brokerConfigFile: brokerConfig,
        persistFile: join(dir, 'store.aof'),
        logLevel: 'silent',
      })
      try {
        const w = await RawClient.connect(emulator.brokerUrl, 'w')
        assert.equal((await w.request(Request.set('cfg/a', '1'))).payload.toString(), Reply.ok.toString())
        assert.equal(
          (await w.request(Request.set('free', '1'), { props: { 'aio-persistence': 'true' } })).payload.toString(),
          Reply.ok.toString(),
        )
        assert.equal((await w.request(Request.set('free', '2'))).payload.toString(), Reply.ok.toString())
        await w.close()
        const unasked = emulator.admin!.inspect(Buffer.from('free'))!
        assert.equal(unasked.persisted, false)
        assert.equal(
          unasked.notPersistedBecause,
          'noRule',
          'the store persists; this write did not ask and no rule names the key',
        )
        await (async () => {
          const again = await RawClient.connect(emulator.brokerUrl, 'w')
          assert.equal(
            (
              await again.request(Request.set('free', '1'), { props: { 'aio-persistence': 'true' } })
            ).payload.toString(),
            Reply.ok.toString(),
          )
          await again.close()
        })()
        const cfg = emulator.admin!.inspect(Buffer.from('cfg/a'), 'r')!
        assert.equal(cfg.persistedBy, 'stateStoreResources[0] Pattern "cfg/*"')
        assert.equal(cfg.notPersistedBecause, null)
        assert.deepEqual(cfg.access, {
          clientId: 'r',
          read: { allowed: true, rule: 'p rules[1].stateStoreResources[0] Read Pattern ("cfg/*")' },
          write: { allowed: false, rule: null },
        })
        const free = emulator.admin!.inspect(Buffer.from('free'), 'w')!
        assert.equal(free.persistedBy, 'the user property aio-persistence=true')
        assert.equal(free.access?.write.rule, 'p rules[0].stateStoreResources[0] ReadWrite Pattern ("free")')
        assert.equal(emulator.admin!.inspect(Buffer.from('free'))!.access, null, 'no client named, nothing said')
      } finally {
        await emulator.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })

  describe('the log under a policy', () => {
    it("names the refused key, cut to a sane length, and keeps the clients' service checks out of the info log", async () => {
      const dir = mkdtempSync(join(tmpdir(), 'emu-refusal-log-'))
      const auth = join(dir, 'authz.yaml')
      writeFileSync(
        auth,
        `kind: BrokerAuthorization\napiVersion: mqttbroker.iotoperations.azure.com/v1\nmetadata: { name: p }\nspec:\n  authorizationPolicies:\n    rules:\n      - principals: { clientIds: [w] }\n        brokerResources: [{ method: Connect }, { method: Subscribe, topics: ["clients/{principal.clientId}/#"] }]\n        stateStoreResources:\n          - { method: ReadWrite, keys: ["mine/*"] }\n`,
      )
      const lines: string[] = []
      const emulator = await startEmulator({
        listen: { port: 0 },
        authorizationFile: auth,
        logLevel: 'info',
        logger: (level, message) => lines.push(`[${level}] ${message}`),
      })
      const client = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'w', requestTimeoutMs: 3000 })
      try {
        await client.ready({ timeoutMs: 5000 })
        assert.equal(await client.checkService({ timeoutMs: 3000 }), 'answered', 'a refused probe is an answer')
        await assert.rejects(
          client.set('other/key', 'x'),
          (err) => err instanceof ServiceError && err.code === 'NotAuthorized',
        )
        const long = `line\n${'x'.repeat(300)}`
        await assert.rejects(
          client.set(long, 'x'),
          (err) => err instanceof ServiceError && err.code === 'NotAuthorized',
        )
        const refused = lines.filter((l) => l.startsWith('[info] refused'))
        assert.deepEqual(refused.slice(0, 1), [
          '[info] refused SET from client "w": -ERR NotAuthorized (no rule allows client "w" to write key "other/key")',
        ])
        assert.equal(refused.length, 2, lines.join('\n'))
        assert.equal(
          refused[1],
          `[info] refused SET from client "w": -ERR NotAuthorized (no rule allows client "w" to write key ${JSON.stringify(`line\n${'x'.repeat(75)}`)}… (305 bytes))`,
        )
        assert.deepEqual(
          lines.filter((l) => l.includes('GET')),
          [],
          'the service check is not in the info log',
        )
      } finally {
        await client.close()
        await emulator.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })

  describe('the policy rehearsal of docs/aio-broker.md, files and command as written there', () => {
    it("lets node-red-0 work, Test connection's own id connect, and the sidebar's inspector show persistence and access", async () => {
      const page = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'aio-broker.md'), 'utf8')
      const block = (name: string) =>
        new RegExp('```yaml\\n(# ' + name.replace('.', '\\.') + '[^\\n]*\\n[\\s\\S]*?)```').exec(page)?.[1]
      const command = /npx aio-statestore-emulator (--listen \d+ .*)/.exec(page)?.[1]
      assert.ok(block('authz.yaml') && block('broker.yaml') && command, 'the page has both files and the command')
      for (const flag of ['--auth authz.yaml', '--broker-config broker.yaml', '--persist state.aof', '--admin'])
        assert.ok(command.includes(flag), `the command has ${flag}: ${command}`)
      const dir = mkdtempSync(join(tmpdir(), 'emu-rehearsal-'))
      writeFileSync(join(dir, 'authz.yaml'), block('authz.yaml')!)
      writeFileSync(join(dir, 'broker.yaml'), block('broker.yaml')!)
      const emulator = await startEmulator({
        listen: { port: 0 },
        authorizationFile: join(dir, 'authz.yaml'),
        brokerConfigFile: join(dir, 'broker.yaml'),
        persistFile: join(dir, 'state.aof'),
        adminOverMqtt: true,
        logLevel: 'silent',
      })
      const flows = new StateStoreClient({
        brokerUrl: emulator.brokerUrl,
        clientId: 'node-red-0',
        requestTimeoutMs: 3000,
      })
      const testButton = new StateStoreClient({
        brokerUrl: emulator.brokerUrl,
        clientId: 'node-red-0-test-1a2b3c',
        requestTimeoutMs: 3000,
      })
      let found: Awaited<ReturnType<typeof RemoteEmulatorAdmin.discover>> = null
      try {
        await flows.ready({ timeoutMs: 5000 })
        assert.equal((await flows.set('recipe3', 'A')).applied, true)
        await testButton.ready({ timeoutMs: 5000 })
        assert.equal(await testButton.checkService({ timeoutMs: 3000 }), 'answered')
        found = await RemoteEmulatorAdmin.discover({ brokerUrl: emulator.brokerUrl, clientId: 'node-red-0' })
        assert.ok(found, 'the sidebar reaches the admin channel as node-red-0-admin-*')
        const details = await found.admin.inspect(Buffer.from('recipe3'), 'node-red-0')
        assert.equal(details?.persistedBy, 'stateStoreResources[0] Pattern "recipe*"')
        assert.equal(details?.access?.write.allowed, true)
      } finally {
        await found?.admin.close()
        await Promise.all([flows.close(), testButton.close()])
        await emulator.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })

  describe("the README's policy with the project's own client", () => {
    it('lets the named client connect, use its keys and watch them (its own notifications need no Subscribe rule), and refuses the rest', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'emu-readme-policy-'))
      const auth = join(dir, 'authz.yaml')
      writeFileSync(
        auth,
        `apiVersion: mqttbroker.iotoperations.azure.com/v1\nkind: BrokerAuthorization\nmetadata: { name: node-red-policy }\nspec:\n  authorizationPolicies:\n    rules:\n      - principals:\n          clientIds: ["node-red-0"]\n        brokerResources:\n          - method: Connect\n          - method: Subscribe\n            topics: ["clients/{principal.clientId}/#"]\n        stateStoreResources:\n          - method: ReadWrite\n            keyType: Pattern\n            keys: ["lines/{principal.clientId}/*", "recipe[0-9]"]\n          - method: Read\n            keyType: String\n            keys: ["plant-config"]\n`,
      )
      const emulator = await startEmulator({ listen: { port: 0 }, authorizationFile: auth, logLevel: 'silent' })
      const client = new StateStoreClient({
        brokerUrl: emulator.brokerUrl,
        clientId: 'node-red-0',
        requestTimeoutMs: 3000,
      })
      const stranger = new StateStoreClient({
        brokerUrl: emulator.brokerUrl,
        clientId: 'node-red-1',
        requestTimeoutMs: 3000,
      })
      try {
        await client.ready({ timeoutMs: 5000 })
        const seen: string[] = []
        const watch = await client.observe('recipe3', (n) => seen.push(n.operation))
        assert.equal((await client.set('lines/node-red-0/speed', '12')).applied, true)
        assert.equal((await client.set('recipe3', 'A')).applied, true)
        assert.equal((await client.get('plant-config')).value, null)
        await assert.rejects(
          client.set('plant-config', 'x'),
          (err) => err instanceof ServiceError && err.code === 'NotAuthorized',
        )
        await assert.rejects(
          client.set('recipe33', 'x'),
          (err) => err instanceof ServiceError && err.code === 'NotAuthorized',
        )
        const started = Date.now()
        while (seen.length === 0 && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 20))
        assert.deepEqual(seen.slice(0, 1), ['SET'])
        await watch.close()
        // Nobody lets node-red-1 connect: the client reports it and keeps trying, never connected.
        await assert.rejects(stranger.ready({ timeoutMs: 1500 }))
        assert.notEqual(stranger.status.state, 'connected')
      } finally {
        await Promise.all([client.close(), stranger.close()])
        await emulator.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })
})
