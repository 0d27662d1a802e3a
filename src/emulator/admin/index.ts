/**
 * The admin channel, in one room: the key browser an emulator opens (key-browser.ts), its wire
 * format over MQTT (wire.ts), the emulator's side of that wire (server.ts) and a tool's (client.ts).
 */
export {
  adminFor,
  EmulatorAdmin,
  registerAdmin,
  type KeyDetails,
  type KeyEntry,
  type KeyPage,
  type KeyQuery,
} from './key-browser'
export {
  ADMIN_REQUEST_TOPIC,
  adminResponseTopic,
  type AdminHello,
  type AdminReply,
  type AdminRequest,
  type WireKeyDetails,
} from './wire'
export { AdminServer } from './server'
export { RemoteAdminRegistry, RemoteEmulatorAdmin, type AdminChannel } from './client'
