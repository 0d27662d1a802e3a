// Preloaded into a command under test (`node --require`): its peak resident set size on stderr as it exits.
const { writeSync } = require('node:fs')
process.on('exit', () => writeSync(2, `\npeak-rss-kib ${process.resourceUsage().maxRSS}\n`))
