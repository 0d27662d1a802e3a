type State = 'unknown' | 'present' | 'absent'

/**
 * What the requests published found behind the request topic: `absent` when the broker said nobody
 * is subscribed (PUBACK 0x10) and nothing answered since.
 *
 * While no service has ever answered on this client, a request that meets an absence found by
 * another (a service check, say) fails at once; the request that found it alone keeps trying, as a
 * service that starts with us may be there within its timeout. Once a service has answered, an
 * absence is a service restarting (or resubscribing after a broker restart), and every request
 * rides through it within its timeout.
 */
export class ServicePresence {
  private state: State = 'unknown'
  /** The request that found the service absent (0: a service check). */
  private absentFoundBy = 0
  private servedBefore = false

  /** `changed` is told when the service becomes known absent, or present again. */
  constructor(private readonly changed: (absent: boolean) => void) {}

  get absent(): boolean {
    return this.state === 'absent'
  }

  /** A response came, or the broker took a request with a subscriber behind the topic. */
  heard(): void {
    this.servedBefore = true
    this.become('present')
  }

  /**
   * The broker said nobody is subscribed to request `id` (a probe: a service check): whether it fails now or is sent
   * again.
   */
  unheard(id: number, probe: boolean): 'fail' | 'resend' {
    if (this.state !== 'absent') this.absentFoundBy = probe ? 0 : id
    this.become('absent')
    return probe || (!this.servedBefore && this.absentFoundBy !== id) ? 'fail' : 'resend'
  }

  private become(state: State): void {
    if (this.state === state) return
    const wasAbsent = this.state === 'absent'
    this.state = state
    if (wasAbsent !== (state === 'absent')) this.changed(state === 'absent')
  }
}
