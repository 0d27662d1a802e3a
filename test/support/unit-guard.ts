/**
 * The unit lane's promise, held while it runs (`npm run test:unit` loads this): a unit test opens
 * no socket and starts no server. One that does fails, naming the lane it belongs in.
 */
import net from 'node:net'

const refuse = (what: string) => (): never => {
  throw new Error(
    `a unit test ${what}: it belongs in test/integration or test/system (CONTRIBUTING.md, "The test lanes")`,
  )
}

net.Socket.prototype.connect = refuse('opened a socket')
net.Server.prototype.listen = refuse('started a server')
