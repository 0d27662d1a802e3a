import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitForPort } from '../../dev/ports'
import { scaled } from './deadline'

/**
 * The mosquitto binary, or null when it is not installed. TEST_WITHOUT_MOSQUITTO=1 answers null
 * anyway, to run the suite as on a laptop without it.
 */
export function mosquittoPath(): string | null {
  if (process.env.TEST_WITHOUT_MOSQUITTO === '1') return null
  for (const candidate of ['/usr/sbin/mosquitto', '/usr/bin/mosquitto']) {
    if (spawnSync(candidate, ['-h']).error === undefined) return candidate
  }
  return null
}

/** Suites that start their own mosquitto: skipped with a message without it, a failure in CI. */
export function requireMosquitto(ctx: Mocha.Context): void {
  if (mosquittoPath()) return
  if (process.env.CI) throw new Error('CI must provide mosquitto (apt-get install mosquitto)')
  console.warn('      (skipped: mosquitto is not installed; apt-get install mosquitto to run these tests)')
  ctx.skip()
}

export interface MosquittoOptions {
  port?: number
  /** Extra lines for mosquitto.conf (listener options, TLS, auth). */
  extraConfig?: string[]
}

/** A mosquitto process on 127.0.0.1 with an MQTT 5 listener and TCP_NODELAY, for tests that start and stop it. */
export class Mosquitto {
  private child: ChildProcess | null = null
  readonly dir = mkdtempSync(join(tmpdir(), 'mosq-'))
  log = ''

  constructor(
    readonly port: number,
    private readonly extraConfig: string[] = [],
  ) {}

  static async start(options: MosquittoOptions = {}): Promise<Mosquitto> {
    if (options.port !== undefined) {
      const broker = new Mosquitto(options.port, options.extraConfig)
      await broker.start()
      return broker
    }
    return Mosquitto.startOnFreePorts(1, ([port]) => ({ ...options, port: port! }))
  }

  /**
   * Starts one on `count` free ports that `options` builds its configuration from. A free port can
   * be taken by another process before mosquitto binds it: then it starts again on new ones.
   */
  static async startOnFreePorts(
    count: number,
    options: (ports: number[]) => MosquittoOptions & { port: number },
  ): Promise<Mosquitto> {
    for (let attempt = 1; ; attempt++) {
      const ports: number[] = []
      for (let i = 0; i < count; i++) ports.push(await freePort())
      const built = options(ports)
      const broker = new Mosquitto(built.port, built.extraConfig)
      try {
        await broker.start()
        return broker
      } catch (err) {
        await broker.stop().catch(() => {})
        if (attempt >= 3 || !broker.log.includes('Address already in use')) throw err
      }
    }
  }

  get url(): string {
    return `mqtt://127.0.0.1:${this.port}`
  }

  async start(): Promise<void> {
    const binary = mosquittoPath()
    if (!binary) throw new Error('mosquitto is not installed (apt-get install mosquitto)')
    const conf = join(this.dir, 'mosquitto.conf')
    const hasListener = this.extraConfig.some((l) => l.startsWith('listener'))
    writeFileSync(
      conf,
      [
        ...(hasListener ? [] : [`listener ${this.port} 127.0.0.1`, 'allow_anonymous true']),
        'set_tcp_nodelay true',
        'max_inflight_messages 0',
        'max_queued_messages 100000',
        'persistence false',
        ...this.extraConfig,
        '',
      ].join('\n'),
    )
    this.child = spawn(binary, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.child.stdout?.on('data', (d) => (this.log += d))
    this.child.stderr?.on('data', (d) => (this.log += d))
    await waitForPort(this.port, scaled(5000), 'mosquitto', () => this.log)
  }

  /** Killed when this process exits, however it exits. */
  killOnExit(): void {
    process.once('exit', () => this.child?.kill('SIGKILL'))
  }

  /** SIGKILL, as a crash: no goodbye to anyone. */
  async kill(): Promise<void> {
    await this.stopWith('SIGKILL')
  }

  async stop(): Promise<void> {
    await this.stopWith('SIGTERM')
  }

  /** SIGSTOP / SIGCONT: a paused broker, whose sockets stay open; nothing when it is not running. */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    if (this.child && this.child.exitCode === null) this.child.kill(signal)
  }

  private async stopWith(signal: NodeJS.Signals): Promise<void> {
    const child = this.child
    this.child = null
    if (!child || child.exitCode !== null) return
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve())
      child.kill(signal)
    })
  }
}
