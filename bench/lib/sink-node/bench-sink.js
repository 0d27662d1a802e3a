// The end of every benchmark flow (bench/nodered-host.mjs): hands each msg to the bench's
// `benchSink(name, msg)` from the global context. A node of its own rather than a function node,
// whose sandbox cost (some 5 % of the Node-RED process) is neither the flow's nor the reference's.
module.exports = function (RED) {
  function BenchSink(config) {
    RED.nodes.createNode(this, config)
    const sink = this.context().global.get('benchSink')
    const name = config.name
    this.on('input', (msg, _send, done) => {
      sink(name, msg)
      done()
    })
  }
  RED.nodes.registerType('bench-sink', BenchSink)
}
