import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { BUILD_CACHE, goBuild } from './go-build'

/** deploy/, the kit. */
export const DEPLOY = join(__dirname, '..', '..', 'deploy')

export type K8sObject = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; annotations?: Record<string, string>; labels?: Record<string, string> }
  [k: string]: unknown
}

export function yamlDocuments(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
    assert.deepEqual(d.errors, [], file)
    return d.toJS() as unknown
  })
}

/** The cluster tools' module: kustomize at the version its go.mod pins. */
const TOOLS = join(__dirname, '..', 'system', 'deploy', 'tools')

/** The kustomize binary of the pinned version, built from the Go module proxy on first use. */
export function kustomize(): string {
  const pinned = /sigs\.k8s\.io\/kustomize\/kustomize\/v5 (v[\w.-]+)/.exec(readFileSync(join(TOOLS, 'go.mod'), 'utf8'))
  assert.ok(pinned, 'test/system/deploy/tools/go.mod pins kustomize')
  return goBuild(TOOLS, 'sigs.k8s.io/kustomize/kustomize/v5', join(BUILD_CACHE, 'bin', `kustomize-${pinned[1]}`))
}

/** What `kubectl apply -k DIR` sends: the real kustomize's `build`, parsed. */
export function renderKustomization(dir: string): K8sObject[] {
  const run = spawnSync(kustomize(), ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  assert.equal(run.status, 0, `kustomize build ${dir}:\n${run.stderr}`)
  return parseAllDocuments(run.stdout).map((d) => {
    assert.deepEqual(d.errors, [], `kustomize build ${dir}`)
    return d.toJS() as K8sObject
  })
}

/** What `kubectl apply -k deploy/base` sends. */
export function renderBase(): K8sObject[] {
  return renderKustomization(join(DEPLOY, 'base'))
}

/** What `kubectl apply -k deploy/overlays/<name>` sends, for any overlay there. */
export function renderOverlay(name: string): K8sObject[] {
  return renderKustomization(join(DEPLOY, 'overlays', name))
}

export function renderHa(): K8sObject[] {
  return renderOverlay('ha')
}

export interface DockerInstruction {
  keyword: string
  /** The arguments as written, continuation lines joined. */
  text: string
}

/** A Dockerfile's instructions: comments dropped, `\` continuations joined. */
export function readDockerfile(file: string): DockerInstruction[] {
  const lines = readFileSync(file, 'utf8').replace(/\\\n/g, ' ').split('\n')
  return lines
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [, keyword, text] = /^(\w+)\s+(.*)$/.exec(l) ?? assert.fail(`${file}: cannot read ${l}`)
      return { keyword: keyword!.toUpperCase(), text: text!.trim() }
    })
}

/** ${NAME} and $NAME replaced by the build's ARG/ENV values. */
export function expandDockerVariables(text: string, vars: Record<string, string>): string {
  return text.replace(
    /\$\{(\w+)\}|\$(\w+)/g,
    (whole, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? whole,
  )
}
