// Prints the path of the anvil executable that @foundry-rs/anvil installed: the wrapper
// package keeps it in a platform package (an optional dependency, e.g.
// @foundry-rs/anvil-linux-amd64), resolved here as Node resolves it.

import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch]
const name = `@foundry-rs/anvil-${process.platform}-${arch}`
const binary = process.platform === 'win32' ? 'anvil.exe' : 'anvil'
let path
try {
  path = join(dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)), 'bin', binary)
} catch (e) {
  console.error(`${name} is not installed (platform ${process.platform}/${process.arch}): ${e.message}`)
  process.exit(1)
}
if (!existsSync(path)) {
  console.error(`${path} is missing`)
  process.exit(1)
}
console.log(path)
