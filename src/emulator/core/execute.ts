import { Hlc, HlcError, type HybridLogicalClock } from '../../hlc'
import { maxNotifiedKeyBytes, Prop, Reply, type Dialect } from '../../protocol'
import { SERVICE_ERROR_TEXT, type ServiceErrorCode } from '../../diagnostics/errors'
import { accessOf, parseCommand, type Command } from './commands'
import type { AuthorizationPolicy } from './authorization-policy'
import { PersistencePolicy } from './persistence-policy'
import { describePrincipal, type Principal } from './principal'
import { describeQuota, EMULATOR_REFUSAL_TEXT, type EmulatorRefusalCode } from './refusals'
import type { Registrations } from './registrations'
import type { Keyspace, QuotaLimit } from './keyspace'
import { ScanWalks, type ScanLimits } from './scan'
import { shownKey } from './shown-key'

/** What the executor needs to know about a request besides its payload. */
export interface RequestContext {
  /** A user property's value (the first, if repeated); undefined when absent. */
  readonly prop: (name: string) => string | undefined
  /**
   * Who is asking: the client id notifications are addressed to and rules are matched against; null
   * when the request names none the service can stand behind (see identity.ts).
   */
  clientId: string | null
  /** The dialect the request came in; v1 when absent. */
  dialect?: Dialect
}

export interface Answer {
  payload: Buffer
  /** `__ts` of the answer: the version concerned, when there is one. */
  timestamp?: string
  /** The authorization rule that allowed the request, when a policy is in force (for the log). */
  authorizedBy?: string
  /** Why a SET's key is persisted (for the log); absent when it is not. */
  persistedBy?: string
  /**
   * Set when the request changed what persistence keeps (a persisted key, a KEYNOTIFY
   * registration): its answer is kept with the change, so a re-send after a restart is answered.
   */
  wrote?: true
  /** Set when the answer is `-ERR`: which error and why, for the log. */
  error?: {
    code: ServiceErrorCode | EmulatorRefusalCode | 'KeyTooLongToNotify'
    detail: string
    quota?: QuotaLimit | 'maxRegistrations'
  }
  command?: Command
}

export interface ExecutorOptions {
  store: Keyspace
  clock: HybridLogicalClock
  registrations: Registrations
  /** The BrokerAuthorization rules in force; null or absent: every request is allowed. */
  authorization?: AuthorizationPolicy | null
  /** Who a client id is (user name, attributes) where the broker knows; by default the client id alone. */
  principalOf?: (clientId: string) => Principal
  /** Whether SETs can make persistent keys (the emulator has a persistence file). */
  persistence?: boolean
  /** Which SETs are persisted (with `persistence`); by default those with `aio-persistence: true`. */
  persistencePolicy?: PersistencePolicy
  /** SCAN's page sizes and how long a scan is remembered; DEFAULT_SCAN_LIMITS otherwise. */
  scanLimits?: ScanLimits
  /** false: answer SCAN `unknown command`, as the released broker does. Default true. */
  scan?: boolean
  /** KEYNOTIFY registrations one client id may hold (`--max-registrations`); Infinity or absent for none. */
  maxRegistrations?: number
}

/**
 * Executes one request against the store, synchronously, in the order the checks of the service
 * come: payload, timestamps, authorization, fencing token, then the verb itself.
 */
export class Executor {
  private readonly scans: ScanWalks

  constructor(private readonly options: ExecutorOptions) {
    this.scans = new ScanWalks(options.store, options.scanLimits)
  }

  execute(payload: Buffer, ctx: RequestContext): Answer {
    const parsed = parseCommand(payload)
    if (!parsed.ok) return refuse(parsed.code, parsed.detail)
    const command = parsed.command
    if (command.verb === 'KEYNOTIFY' && ctx.dialect?.notifications === false) {
      return refuse('UnknownCommand', `KEYNOTIFY does not exist in the ${ctx.dialect.name} dialect`, command)
    }
    if (command.verb === 'SCAN' && this.options.scan === false)
      return refuse('UnknownCommand', 'SCAN is off, as in the released broker', command)
    const { clock, authorization } = this.options

    const tsText = ctx.prop(Prop.timestamp)
    let ts: Hlc | null = null
    if (tsText === undefined) {
      if (command.verb === 'SET') return refuse('TimestampMissing', 'SET without __ts', command)
    } else {
      ts = parseHlc(tsText)
      if (!ts) return refuse('TimestampMalformed', `__ts ${JSON.stringify(tsText.slice(0, 80))} is not an HLC`, command)
      if (!withinDrift(clock, ts)) return refuse('TimestampSkew', `__ts ${tsText} is too far ahead`, command)
    }

    // Notifications go to a topic named after the client id: without one, a registration would be for nobody.
    if (command.verb === 'KEYNOTIFY' && ctx.clientId === null) {
      return refuseAs(
        'UnknownClient',
        'no __srcId, $partition or __invId, and a response topic not under clients/<id>/',
        command,
      )
    }
    // A key no SET may store cannot exist: refused before the rules' patterns are matched over all of its bytes.
    const keyLimit = this.options.store.keyLimit
    if (command.verb !== 'SCAN' && command.key.length > keyLimit) {
      const answer = refuse(
        'QuotaExceeded',
        `${command.verb} refused: ` +
          `${describeQuota({ limit: 'maxKeyBytes', max: keyLimit, needed: command.key.length })}`,
        command,
      )
      answer.error!.quota = 'maxKeyBytes'
      return answer
    }
    // A caller without a client id is matched as the empty one: only a rule for any client ("*") grants it.
    let authorizedBy: string | undefined
    // SCAN is not refused: it leaves out the keys the caller may not read (scan.ts).
    if (authorization && command.verb !== 'SCAN') {
      const clientId = ctx.clientId ?? ''
      const principal = this.options.principalOf?.(clientId) ?? { clientId }
      const decision = authorization.decideKey(principal, accessOf(command), command.key.toString('latin1'))
      if (!decision.allowed) {
        return refuse(
          'NotAuthorized',
          `no rule allows ${describePrincipal(principal)} to ${accessOf(command)} key ${shownKey(command.key)}`,
          command,
        )
      }
      authorizedBy = decision.rule ?? undefined
    }

    let fencingToken: Hlc | null = null
    if (command.verb === 'SET' || command.verb === 'DEL' || command.verb === 'VDEL') {
      const ftText = ctx.prop(Prop.fencingToken)
      if (ftText !== undefined) {
        fencingToken = parseHlc(ftText)
        if (!fencingToken)
          return refuse('TimestampMalformed', `__ft ${JSON.stringify(ftText.slice(0, 80))} is not an HLC`, command)
        if (!withinDrift(clock, fencingToken))
          return refuse('FencingTokenSkew', `__ft ${ftText} is too far ahead`, command)
      }
    }

    // The receive rule is applied once: the reading it gives is the version of the write this request
    // makes (the article's worked example: `T:0:client` is answered `T:1:<node>`), not merged here and
    // ticked again when the version is minted.
    let received: Hlc | null = null
    if (ts) {
      try {
        received = clock.update(ts)
      } catch (err) {
        if (err instanceof HlcError) return refuse('TimestampMalformed', `__ts ${tsText}: ${err.message}`, command)
        throw err
      }
    }

    const answer = this.run(command, ctx, { fencingToken, received })
    answer.command = command
    if (authorizedBy !== undefined) answer.authorizedBy = authorizedBy
    return answer
  }

  private run(
    command: Command,
    ctx: RequestContext,
    write: { fencingToken: Hlc | null; received: Hlc | null },
  ): Answer {
    const { store, registrations, persistence } = this.options
    switch (command.verb) {
      case 'GET': {
        const record = store.get(command.key)
        return record
          ? { payload: Reply.value(record.value), timestamp: record.version.toString() }
          : { payload: Reply.nil }
      }
      case 'SET': {
        const policy = this.options.persistencePolicy ?? PersistencePolicy.dynamicOnly
        // The key keeps what was asked for it even without a persistence file, so an export tells it
        // and an import into a store with one keeps it; only the file makes it outlive a restart.
        const rule = policy.decide(command.key.toString('latin1'), ctx.prop).rule
        const persist = rule !== null
        const persistedBy = persistence === true ? rule : null
        const outcome = store.set(command.key, command.value, {
          condition: command.condition,
          ...(command.expiryMs !== undefined ? { expiryMs: command.expiryMs } : {}),
          ...write,
          persist,
        })
        if (outcome.kind === 'error') {
          const answer = refuse(
            outcome.code,
            outcome.quota ? `SET refused: ${describeQuota(outcome.quota)}` : 'SET refused by the store',
            command,
          )
          if (outcome.quota) answer.error!.quota = outcome.quota.limit
          return answer
        }
        const answer: Answer = {
          payload: outcome.kind === 'applied' ? Reply.ok : Reply.notApplied,
          timestamp: outcome.version.toString(),
        }
        if (persistedBy !== null && outcome.kind === 'applied') answer.persistedBy = persistedBy
        if (outcome.kind === 'applied' && outcome.persistent) answer.wrote = true
        return answer
      }
      case 'DEL':
      case 'VDEL': {
        const outcome =
          command.verb === 'DEL' ? store.del(command.key, write) : store.vdel(command.key, command.value, write)
        switch (outcome.kind) {
          case 'error':
            return refuse(outcome.code, `${command.verb} refused by the store`, command)
          case 'missing':
            return { payload: Reply.integer(0) }
          case 'deleted':
            return {
              payload: Reply.integer(1),
              timestamp: outcome.version.toString(),
              ...(outcome.persistent ? { wrote: true as const } : {}),
            }
          case 'mismatch':
            return { payload: Reply.notApplied, timestamp: outcome.version.toString() }
        }
      }
      case 'SCAN': {
        const caller = ctx.clientId ?? ''
        const authorization = this.options.authorization
        // Per key, the decision GET would get: a key the caller may not Read is left out.
        const principal = authorization ? (this.options.principalOf?.(caller) ?? { clientId: caller }) : null
        const page = this.scans.page({
          pattern: command.pattern,
          token: command.token,
          clientId: caller,
          mayRead:
            authorization && principal
              ? (key) => authorization.decideKey(principal, 'read', key.toString('latin1')).allowed
              : () => true,
        })
        if (page.ok) return { payload: Reply.scanPage(page.keys, page.token) }
        return page.refusal === 'SyntaxError'
          ? refuse('SyntaxError', page.detail, command)
          : refuseAs(page.refusal, page.detail, command)
      }
      case 'KEYNOTIFY': {
        // Checked in execute(); repeated for the type.
        const clientId = ctx.clientId
        if (clientId === null) return refuseAs('UnknownClient', 'no client id', command)
        const version = store.get(command.key)?.version.toString()
        const withVersion = (payload: Buffer): Answer => (version ? { payload, timestamp: version } : { payload })
        if (command.stop) {
          if (!registrations.unregister(clientId, command.key)) return withVersion(Reply.integer(0))
          return { ...withVersion(Reply.ok), wrote: true }
        }
        const max = maxNotifiedKeyBytes(clientId)
        if (command.key.length > max) {
          // Not in the service's catalogue: registering would promise notifications no MQTT topic can carry.
          const text = `the key is too long to be notified: at most ${max} bytes for this client id`
          return {
            payload: Reply.error(text),
            error: { code: 'KeyTooLongToNotify', detail: `a ${command.key.length}-byte key` },
            command,
          }
        }
        const maxRegistrations = this.options.maxRegistrations ?? Infinity
        if (registrations.countOf(clientId) >= maxRegistrations && !registrations.has(clientId, command.key)) {
          const answer = refuse(
            'QuotaExceeded',
            `KEYNOTIFY refused: the client id holds ${maxRegistrations} registrations, as many as ` +
              `--max-registrations allows`,
            command,
          )
          answer.error!.quota = 'maxRegistrations'
          return answer
        }
        // Recorded even when already registered: the earlier record may not be on disk yet.
        registrations.register(clientId, command.key)
        return { ...withVersion(Reply.ok), wrote: true }
      }
    }
  }
}

function refuse(code: ServiceErrorCode, detail: string, command?: Command): Answer {
  return { payload: Reply.error(SERVICE_ERROR_TEXT[code]), error: { code, detail }, ...(command ? { command } : {}) }
}

function refuseAs(code: EmulatorRefusalCode, detail: string, command: Command): Answer {
  return { payload: Reply.error(EMULATOR_REFUSAL_TEXT[code]), error: { code, detail }, command }
}

function parseHlc(text: string): Hlc | null {
  try {
    return Hlc.parse(text)
  } catch (err) {
    if (err instanceof HlcError) return null
    throw err
  }
}

function withinDrift(clock: HybridLogicalClock, reading: Hlc): boolean {
  try {
    clock.validate(reading)
    return true
  } catch (err) {
    if (err instanceof HlcError) return false
    throw err
  }
}
