// Sums an allocation profile written by bench/lib/alloc-profile.cjs: bytes allocated per package, per
// function, and per calling chain for the largest ones.
//   node bench/lib/alloc-report.mjs <alloc-PID.heapprofile> [rows]
import { readFileSync } from 'node:fs'

const [file, rowsArg] = process.argv.slice(2)
const rows = Number(rowsArg ?? 20)
const profile = JSON.parse(readFileSync(file, 'utf8'))
const where = (frame) => {
  const url = frame.url
  const place = url.includes('node_modules/') ? url.slice(url.lastIndexOf('node_modules/') + 13) : url.includes('/dist/') ? `dist/${url.split('/dist/')[1]}` : url || '(native)'
  return `${frame.functionName || '(anonymous)'} ${place}:${frame.lineNumber + 1}`
}
const packageOf = (url) => {
  if (url.includes('node_modules/')) return url.slice(url.lastIndexOf('node_modules/') + 13).split('/')[0]
  if (url.includes('/dist/')) return 'this package (dist/)'
  return url.startsWith('node:') ? 'node' : url || '(native)'
}
const byPackage = new Map()
const byFunction = new Map()
const byChain = new Map()
let total = 0
const walk = (node, stack) => {
  const name = where(node.callFrame)
  const chain = [...stack, name]
  if (node.selfSize > 0) {
    total += node.selfSize
    byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize)
    const pkg = packageOf(node.callFrame.url)
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + node.selfSize)
    const key = chain.slice(-3).reverse().join(' <- ')
    byChain.set(key, (byChain.get(key) ?? 0) + node.selfSize)
  }
  for (const child of node.children ?? []) walk(child, chain)
}
walk(profile.head, [])
const show = (title, map) => {
  console.log(`\n${title}`)
  for (const [name, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) console.log(`${((bytes / total) * 100).toFixed(1).padStart(5)} %  ${(bytes / 1e6).toFixed(1).padStart(8)} MB  ${name}`)
}
console.log(`${(total / 1e6).toFixed(1)} MB allocated (sampled)`)
show('by package of the allocating function', byPackage)
show('by allocating function', byFunction)
show('by the allocating function and its two callers', byChain)
