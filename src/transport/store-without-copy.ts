import type { MqttClient } from 'mqtt'

interface StoredPublish {
  cmd: string
  properties?: { topicAlias?: number }
}

interface ClientInternals {
  _storeAndSend?: (packet: StoredPublish, cb: ((err?: Error) => void) | undefined, cbStorePut: () => void) => void
  _writePacket?: (packet: StoredPublish, cb: ((err?: Error) => void) | undefined) => void
  outgoingStore?: { put(packet: StoredPublish, cb: (err?: Error) => void): unknown }
}

/**
 * Keeps a QoS 1 PUBLISH in mqtt.js's outgoing store as it is sent instead of as a deep copy.
 *
 * mqtt.js 5 copies every QoS 1/2 PUBLISH (payload and properties included, through rfdc) before
 * storing it for a re-send, so that the copy can get its topic name back where a Topic Alias
 * replaced it in the packet that goes out. A client that sends no Topic Alias, as ours, has nothing
 * to get back: the copy is a payload copy and a dozen objects per message, for the collector to
 * sweep (about 6% of the emulator's CPU at 2,000 SETs/s, answer and notification both). A packet
 * with a Topic Alias, or an mqtt.js without this internal, keeps the library's own behaviour.
 */
export function storeWithoutCopy(client: MqttClient): void {
  const c = client as unknown as ClientInternals
  const original = c._storeAndSend
  if (typeof original !== 'function' || typeof c._writePacket !== 'function') return
  c._storeAndSend = function (this: ClientInternals, packet, cb, cbStorePut) {
    const store = this.outgoingStore
    if (packet.cmd !== 'publish' || packet.properties?.topicAlias !== undefined || !store)
      return original.call(this, packet, cb, cbStorePut)
    store.put(packet, (err) => {
      if (err) return cb?.(err)
      cbStorePut()
      this._writePacket!(packet, cb)
    })
  }
}
