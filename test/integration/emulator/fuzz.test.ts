import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { SERVICE_ERROR_TEXT } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { Prop, Reply, Request } from '../../../src/protocol'
import { decodeExact, encodeCommand } from '../../../src/resp'
import { startEmulator, type Emulator, type EmulatorOptions } from '../../../src/emulator'
import { EMULATOR_REFUSAL_TEXT } from '../../../src/emulator/core/refusals'
import { mqttBrokerUrl } from '../../support/broker'
import { RawClient, type Received } from './raw-client'

// The service's texts, and the emulator's own for correlation data reused by another request.
const CATALOGUE = new Set<string>([...Object.values(SERVICE_ERROR_TEXT), EMULATOR_REFUSAL_TEXT.CorrelationReused])
const WORDS = [
  'GET',
  'SET',
  'DEL',
  'VDEL',
  'KEYNOTIFY',
  'STOP',
  'NX',
  'NEX',
  'PX',
  'EX',
  'get',
  '1000',
  '0',
  '-1',
  '',
  '\r\n',
  '*1',
  '$-1',
]

/** Text a broker passes as an MQTT UTF-8 string: no U+0000 (forbidden) and no lone surrogates. */
const mqttText = fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => s.replace(/\0/g, ''))

const hlcText = fc.oneof(
  fc.constant(null).map(() => new Hlc(Date.now(), 0, 'fuzz').toString()),
  fc.integer({ min: 0, max: 200_000 }).map((ahead) => new Hlc(Date.now() + ahead, 0, 'fuzz').toString()),
  fc.tuple(fc.nat(), fc.nat(), mqttText).map(([t, c, n]) => `${t}:${c}:${n}`),
  mqttText,
)

const propValue = fc.oneof(
  mqttText,
  hlcText,
  fc.array(fc.oneof(mqttText, hlcText), { minLength: 1, maxLength: 3 }),
  fc.constantFrom('true', 'TRUE', 'false'),
)

const userProps = fc.dictionary(
  fc.oneof(
    fc.constantFrom(
      Prop.timestamp,
      Prop.fencingToken,
      Prop.sourceId,
      Prop.persist,
      Prop.partition,
      Prop.invokerId,
      Prop.protocolVersion,
    ),
    mqttText.filter((s) => s.length > 0),
  ),
  propValue,
  {
    maxKeys: 6,
  },
)

const validCommand = fc
  .array(
    fc.oneof(
      fc.constantFrom(...WORDS),
      fc.uint8Array({ maxLength: 24 }).map((a) => Buffer.from(a)),
    ),
    { minLength: 0, maxLength: 7 },
  )
  .chain((rest) =>
    fc.constantFrom('GET', 'SET', 'DEL', 'VDEL', 'KEYNOTIFY').map((verb) => encodeCommand([verb, ...rest])),
  )

const mutated = fc
  .tuple(
    validCommand,
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'cut', 'insert', 'delete')), {
      minLength: 1,
      maxLength: 4,
    }),
  )
  .map(([payload, edits]) => {
    let b = Buffer.from(payload)
    for (const [at, byte, op] of edits) {
      const i = b.length === 0 ? 0 : at % b.length
      if (op === 'flip' && b.length > 0) b[i] = byte
      else if (op === 'cut') b = b.subarray(0, i)
      else if (op === 'insert') b = Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)])
      else b = Buffer.concat([b.subarray(0, i), b.subarray(i + 1)])
    }
    return b
  })

const payload = fc.oneof(
  validCommand,
  mutated,
  fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
)

/** Every answer is a complete RESP3 reply of a kind the service gives, errors from the catalogue. */
function assertWellFormed(r: Received): void {
  assert.equal(r.prop(Prop.status), '200')
  assert.ok(r.payload.length > 0, 'never an empty payload')
  const v = decodeExact(r.payload)
  switch (v.kind) {
    case 'simple':
      assert.equal(v.value, 'OK')
      break
    case 'integer':
      assert.ok(v.value === -1 || v.value === 0 || v.value === 1)
      break
    case 'bulk':
    case 'null':
      break
    case 'error':
      assert.ok(v.value.startsWith('ERR ') && CATALOGUE.has(v.value.slice(4)), v.value)
      break
    default:
      assert.fail(`unexpected ${v.kind}`)
  }
  const version = r.prop(Prop.timestamp)
  if (version !== undefined) Hlc.parse(version)
}

function fuzzSuite(
  brokerName: string,
  start: (ctx: Mocha.Context, options: EmulatorOptions) => Promise<Emulator>,
): void {
  describe(`emulator fuzz over ${brokerName}: random and mutated requests`, function () {
    this.timeout(30_000)
    let emulator: Emulator
    let client: RawClient
    let dir: string
    before(async function () {
      dir = mkdtempSync(join(tmpdir(), 'emu-fuzz-'))
      emulator = await start(this, { persistFile: join(dir, 'fuzz.aof'), maxKeys: 50, logLevel: 'silent' })
      client = await RawClient.connect(emulator.brokerUrl)
    })
    after(async () => {
      await client.close()
      await emulator.stop()
      rmSync(dir, { recursive: true, force: true })
    })

    it('answers every request with a well-formed reply, replays re-sends, refuses other requests under used correlation data, and keeps serving', async () => {
      const reused = Reply.error(EMULATOR_REFUSAL_TEXT.CorrelationReused)
      const past: Array<{
        correlation: Buffer
        payload: Buffer
        props: Record<string, string | string[]>
        answer: Buffer
      }> = []
      await fc.assert(
        // Expiry from 30 s: every request stays remembered for the whole run.
        fc.asyncProperty(
          payload,
          userProps,
          fc.integer({ min: 30, max: 3600 }),
          fc.nat(),
          fc.constantFrom('new', 'resend', 'reuse'),
          async (p, props, expiry, pick, kind) => {
            const first = past.length > 0 && kind !== 'new' ? past[pick % past.length]! : null
            if (first && kind === 'resend') {
              // The same PUBLISH again, as MQTT re-sends it: the first answer, byte for byte.
              const r = await client.request(first.payload, {
                props: first.props,
                expiry,
                correlation: first.correlation,
                timeoutMs: 3000,
              })
              assert.ok(r.payload.equals(first.answer), 'a re-send gets the first answer')
              return
            }
            if (first) {
              // Another request under the same correlation data: refused, whatever it asks.
              const other = p.equals(first.payload) ? Buffer.concat([p, Buffer.from('x')]) : p
              const r = await client.request(other, { props, expiry, correlation: first.correlation, timeoutMs: 3000 })
              assertWellFormed(r)
              assert.ok(
                r.payload.equals(reused),
                `another request under used correlation data is refused: ${JSON.stringify(r.payload.toString('latin1'))}`,
              )
              return
            }
            const full = { ...client.defaultProps(), ...props }
            const correlation = randomBytes(16)
            const r = await client.request(p, { props: full, expiry, correlation, timeoutMs: 3000 })
            assertWellFormed(r)
            past.push({ correlation, payload: p, props: full, answer: r.payload })
          },
        ),
        { numRuns: 400 },
      )
      // Still serving, and still correct.
      assert.ok((await client.request(Request.keyNotify('alive'))).payload.equals(Reply.ok))
      assertWellFormed(await client.request(Request.get('alive')))
    })
  })
}

fuzzSuite('the embedded aedes broker', (_ctx, options) => startEmulator({ ...options, listen: { port: 0 } }))
fuzzSuite('mosquitto', async (ctx, options) => startEmulator({ ...options, brokerUrl: await mqttBrokerUrl(ctx) }))
