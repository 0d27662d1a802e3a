import type { AedesPublishPacket as PublishPacket, Client as AedesClient } from 'aedes' with {
  'resolution-mode': 'import',
}

/**
 * The AIO broker's subscriber queue limit (Broker `spec.advanced.clients.subscriberQueueLimit`:
 * `length`, `strategy` None or DropOldest), for the messages it applies to (the emulator's: key
 * notifications). A subscriber has at most `length` of them sent and not yet acknowledged; the
 * rest wait in its queue, at most `length` too; with DropOldest a message that finds the queue
 * full pushes the oldest waiting one out, and nothing tells the subscriber. None keeps them all.
 */
export interface SubscriberQueueLimit {
  length: number
  strategy: 'None' | 'DropOldest'
}

interface Queue {
  unacknowledged: number
  waiting: PublishPacket[]
  /** Payloads of packets let out of the queue, on their way (aedes copies the packet, not its payload). */
  releasing: Set<unknown>
}

export class SubscriberQueues {
  private readonly queues = new Map<string, Queue>()
  dropped = 0

  constructor(
    private readonly limit: SubscriberQueueLimit,
    private readonly applies: (topic: string) => boolean,
    private readonly onDrop: (clientId: string, topic: string, dropped: number) => void,
  ) {}

  /**
   * aedes' authorizeForward: the packet to send now, or null when it waits (or was dropped). Every
   * QoS 1 or 2 message counts as unacknowledged (a clean session's PUBACK names no topic); only
   * those the limit applies to wait or are dropped.
   */
  forward(client: AedesClient, packet: PublishPacket): PublishPacket | null {
    if (packet.qos === 0) return packet
    const queue = this.queueOf(client.id)
    if (
      !this.applies(packet.topic) ||
      queue.releasing.delete(packet.payload) ||
      queue.unacknowledged < this.limit.length
    ) {
      queue.unacknowledged += 1
      return packet
    }
    queue.waiting.push(packet)
    if (this.limit.strategy === 'DropOldest' && queue.waiting.length > this.limit.length) {
      const oldest = queue.waiting.shift()!
      this.dropped += 1
      this.onDrop(client.id, oldest.topic, this.dropped)
    }
    return null
  }

  /** A PUBACK from the subscriber: the next waiting one goes out. */
  acknowledged(client: AedesClient): void {
    const queue = this.queues.get(client.id)
    if (!queue) return
    queue.unacknowledged = Math.max(0, queue.unacknowledged - 1)
    const next = queue.waiting.shift()
    if (!next) return
    queue.releasing.add(next.payload)
    client.publish(
      {
        cmd: 'publish',
        topic: next.topic,
        payload: next.payload,
        qos: next.qos,
        retain: false,
        dup: false,
        properties: next.properties,
      },
      () => {},
    )
  }

  disconnected(clientId: string): void {
    this.queues.delete(clientId)
  }

  private queueOf(clientId: string): Queue {
    let queue = this.queues.get(clientId)
    if (!queue) this.queues.set(clientId, (queue = { unacknowledged: 0, waiting: [], releasing: new Set() }))
    return queue
  }
}
