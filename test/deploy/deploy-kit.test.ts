/**
 * deploy/, the kit to apply: the Kubernetes base rendered as `kubectl apply -k` renders it (its
 * resources, the settings ConfigMap it generates, the namespace) and every object validated offline
 * against the Kubernetes API schemas (kubernetes-models); the Helm values' pod parts likewise; the
 * wiring a cluster needs (the projected SAT for aio-internal, the trust bundle, /data on a claim,
 * the client id from the pod name, the AIO_* environment the SDKs read); settings.js loads with the
 * context store and a login; the authorization rules read as the emulator reads a BrokerAuthorization.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { AIO_VARIABLES, readAioEnvironment } from '../../src/client'
import { readAuthorizationFile } from '../../src/emulator/resource-file'
import { DEPLOY, renderBase, yamlDocuments, type K8sObject } from '../support/deploy-kit'

/** Validates against the Kubernetes API schema of its kind; throws the schema's complaint. */
function validate(object: { apiVersion: string; kind: string }): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const models = require(`kubernetes-models/${object.apiVersion}/${object.kind}`) as Record<string, new (o: unknown) => { validate(): void }>
  new models[object.kind]!(object).validate()
}

describe('deploy/: the kit renders and validates against the Kubernetes API schemas', () => {
  const objects = renderBase()
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely (and broken on purpose below); a wrong path fails the test
  const sts = byKind('StatefulSet')[0] as K8sObject & { spec: any }
  const pod = sts.spec.template.spec
  const container = pod.containers[0]

  it('renders a ServiceAccount, a StatefulSet, a Service and the settings ConfigMap in the AIO namespace, each valid', () => {
    assert.deepEqual(objects.map((o) => o.kind).sort(), ['ConfigMap', 'Service', 'ServiceAccount', 'StatefulSet'])
    for (const o of objects) {
      assert.equal(o.metadata.namespace, 'azure-iot-operations')
      validate(o)
    }
  })

  it('the schema check finds a broken manifest', () => {
    const broken = structuredClone(sts)
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'http'
    assert.throws(() => validate(broken), /containerPort/)
  })

  it('the ServiceAccount mounts no API token and carries an aio-broker-auth/ attribute', () => {
    const sa = byKind('ServiceAccount')[0]!
    assert.equal(sa.automountServiceAccountToken, false)
    assert.ok(Object.keys(sa.metadata.annotations ?? {}).some((a) => a.startsWith('aio-broker-auth/')))
    assert.equal(pod.serviceAccountName, sa.metadata.name)
    assert.equal(pod.automountServiceAccountToken, false)
  })

  it('the pod gets the projected SAT for aio-internal, the trust bundle, /data on a claim, and the client id from its name', () => {
    const volume = (name: string) => pod.volumes.find((v: { name: string }) => v.name === name)
    const mountOf = (name: string) => container.volumeMounts.find((m: { name: string }) => m.name === name)?.mountPath as string
    const env = Object.fromEntries(
      container.env.filter((e: { value?: string }) => e.value !== undefined).map((e: { name: string; value: string }) => [e.name, e.value]),
    )
    const sat = volume('mqtt-client-token').projected.sources[0].serviceAccountToken
    assert.equal(sat.audience, 'aio-internal')
    assert.equal(env.AIO_SAT_FILE, join(mountOf('mqtt-client-token'), sat.path))
    assert.equal(volume('aio-ca-trust-bundle').configMap.name, 'azure-iot-operations-aio-ca-trust-bundle')
    assert.equal(dirname(env.AIO_TLS_CA_FILE), mountOf('aio-ca-trust-bundle'))
    assert.equal(sts.spec.volumeClaimTemplates[0].metadata.name, 'data')
    assert.equal(mountOf('data'), '/data')
    const clientId = container.env.find((e: { name: string }) => e.name === 'AIO_MQTT_CLIENT_ID')
    assert.equal(clientId.valueFrom.fieldRef.fieldPath, 'metadata.name')
    for (const name of Object.keys(env).filter((n) => n.startsWith('AIO_')))
      assert.ok((AIO_VARIABLES as readonly string[]).includes(name), `${name} is one of the SDKs' variables`)
    const aio = readAioEnvironment({ ...env, AIO_MQTT_CLIENT_ID: 'node-red-0' })
    assert.equal(aio.brokerUrl, 'mqtts://aio-broker:18883', 'the default listener, TLS')
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const service = byKind('Service')[0] as K8sObject & { spec: any }
    assert.deepEqual(service.spec.selector, sts.spec.template.metadata.labels)
    assert.equal(byKind('ConfigMap')[0]!.metadata.name, pod.volumes.find((v: { name: string }) => v.name === 'settings').configMap.name)
    assert.ok(container.args.join(' ').includes(`${mountOf('settings')}/settings.js`))
  })

  it("settings.js loads this package's context store with an empty config, and asks for a login", () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const settings = require(join(DEPLOY, 'base', 'settings.js')) as {
      contextStorage: Record<string, { module: unknown; config: unknown }>
      adminAuth: { type: string }
    }
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    assert.equal(settings.contextStorage.statestore!.module, require('../../dist/src/context'))
    assert.deepEqual(settings.contextStorage.statestore!.config, {})
    assert.equal(settings.adminAuth.type, 'credentials')
  })

  it('the Helm values give the chart the same environment and volumes, each part valid', () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the chart's values, parsed YAML walked freely; a wrong path fails the test
    const [values] = yamlDocuments(join(DEPLOY, 'helm', 'values.yaml')) as Array<any>
    assert.equal(values.serviceAccount.annotations['aio-broker-auth/group'], byKind('ServiceAccount')[0]!.metadata.annotations!['aio-broker-auth/group'])
    assert.deepEqual(values.env, container.env, 'the same environment as the StatefulSet')
    assert.equal(values.persistence.enabled, true)
    validate({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'node-red-chart' },
      spec: {
        containers: [{ name: 'node-red', image: `${values.image.repository}:${values.image.tag}`, env: values.env, volumeMounts: values.extraVolumeMounts }],
        volumes: values.extraVolumes,
      },
    } as never)
    for (const v of pod.volumes.filter((v: { name: string }) => v.name !== 'settings'))
      assert.deepEqual(
        values.extraVolumes.find((e: { name: string }) => e.name === v.name),
        v,
        v.name,
      )
  })

  it('the image recipe builds on the official Node-RED image and installs this package beside Node-RED', () => {
    const dockerfile = readFileSync(join(DEPLOY, 'image', 'Dockerfile'), 'utf8')
    assert.match(dockerfile, /^FROM nodered\/node-red:\S+$/m)
    assert.match(dockerfile, /^ARG PACKAGE=node-red-contrib-aio-statestore$/m)
    assert.match(dockerfile, /^RUN npm install .*"\$\{PACKAGE\}"$/m)
  })

  it("the authorization rules read as the emulator reads a BrokerAuthorization, matching the ServiceAccount's attribute", () => {
    const policy = readAuthorizationFile(join(DEPLOY, 'authorization', 'rules.yaml'))
    assert.ok(policy.ruleCount > 0 && policy.grantsBrokerResources)
    const text = readFileSync(join(DEPLOY, 'authorization', 'rules.yaml'), 'utf8')
    for (const warning of ['az iot ops broker authz apply', 'REPLACES the whole policy', 'disconnects every connected client', 'debugging and testing only'])
      assert.ok(text.includes(warning), warning)
    assert.match(text, /- group: node-red/)
  })
})
