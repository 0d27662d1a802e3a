import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
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

interface Kustomization {
  namespace?: string
  resources?: string[]
  patches?: Array<{ path: string }>
  configMapGenerator?: Array<{ name: string; files: string[]; behavior?: 'create' | 'merge' }>
  generatorOptions?: { disableNameSuffixHash?: boolean }
}

/** The list fields a strategic merge patch merges item by item, and the key it matches them by (Kubernetes' patchMergeKey). */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
}

/** A strategic merge, as kustomize applies a patch: maps merged, keyed lists merged by key (`$patch: delete` removes an item), other values replaced. */
export function strategicMerge(target: unknown, patch: unknown, field = ''): unknown {
  if (Array.isArray(patch)) {
    const key = MERGE_KEYS[field]
    if (!key || !Array.isArray(target)) return structuredClone(patch)
    const out = structuredClone(target) as Array<Record<string, unknown>>
    for (const item of patch as Array<Record<string, unknown>>) {
      const at = out.findIndex((t) => t[key] === item[key])
      if (item.$patch === 'delete') {
        assert.ok(at >= 0, `$patch: delete of ${field} ${String(item[key])}, which is not there`)
        out.splice(at, 1)
      } else if (at < 0) out.push(structuredClone(item))
      else out[at] = strategicMerge(out[at], item) as Record<string, unknown>
    }
    return out
  }
  if (patch !== null && typeof patch === 'object') {
    const out: Record<string, unknown> =
      target !== null && typeof target === 'object' && !Array.isArray(target) ? structuredClone(target as Record<string, unknown>) : {}
    for (const [k, v] of Object.entries(patch)) out[k] = strategicMerge(out[k], v, k)
    return out
  }
  return patch
}

/**
 * What `kubectl apply -k DIR` sends, for the features the kit uses: resources (files, or folders
 * rendered the same way), strategic merge patches, ConfigMap generators (create, or merge into a
 * base's), generator options and the namespace.
 */
export function renderKustomization(dir: string): K8sObject[] {
  const [k] = yamlDocuments(join(dir, 'kustomization.yaml')) as Kustomization[]
  assert.ok(k, `${dir}/kustomization.yaml`)
  const objects: K8sObject[] = []
  for (const r of k.resources ?? []) {
    const path = join(dir, r)
    if (existsSync(join(path, 'kustomization.yaml'))) objects.push(...renderKustomization(path))
    else objects.push(...(yamlDocuments(path) as K8sObject[]))
  }
  for (const g of k.configMapGenerator ?? []) {
    assert.ok(k.generatorOptions?.disableNameSuffixHash, 'the StatefulSet names the settings ConfigMap as it is')
    const data = Object.fromEntries(g.files.map((f) => [basename(f), readFileSync(join(dir, f), 'utf8')]))
    const existing = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === g.name) as (K8sObject & { data: Record<string, string> }) | undefined
    if (g.behavior === 'merge') {
      assert.ok(existing, `${dir}: no ConfigMap ${g.name} to merge into`)
      Object.assign(existing.data, data)
    } else objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: g.name }, data })
  }
  for (const p of k.patches ?? []) {
    for (const patch of yamlDocuments(join(dir, p.path)) as K8sObject[]) {
      const at = objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name)
      assert.ok(at >= 0, `${dir}/${p.path}: no ${patch.kind} ${patch.metadata.name} to patch`)
      objects[at] = strategicMerge(objects[at], patch) as K8sObject
    }
  }
  return k.namespace ? objects.map((o) => ({ ...o, metadata: { ...o.metadata, namespace: k.namespace } })) : objects
}

/** What `kubectl apply -k deploy/base` sends. */
export function renderBase(): K8sObject[] {
  return renderKustomization(join(DEPLOY, 'base'))
}

/** What `kubectl apply -k deploy/overlays/<name>` sends. */
export function renderOverlay(name: 'ha' | 'x509'): K8sObject[] {
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
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? whole)
}
