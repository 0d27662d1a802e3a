import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { parseAllDocuments } from 'yaml'

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

/** What `kubectl apply -k deploy/base` sends: the resources, the generated ConfigMap, the namespace on each. */
export function renderBase(): K8sObject[] {
  const dir = join(DEPLOY, 'base')
  const [k] = yamlDocuments(join(dir, 'kustomization.yaml')) as Array<{
    namespace: string
    resources: string[]
    configMapGenerator: Array<{ name: string; files: string[] }>
    generatorOptions?: { disableNameSuffixHash?: boolean }
  }>
  assert.ok(k && k.generatorOptions?.disableNameSuffixHash, 'the StatefulSet names the settings ConfigMap as it is')
  const objects = k.resources.flatMap((r) => yamlDocuments(join(dir, r)) as K8sObject[])
  for (const g of k.configMapGenerator) {
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: g.name },
      data: Object.fromEntries(g.files.map((f) => [basename(f), readFileSync(join(dir, f), 'utf8')])),
    })
  }
  return objects.map((o) => ({ ...o, metadata: { ...o.metadata, namespace: k.namespace } }))
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
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? whole)
}
