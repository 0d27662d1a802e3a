/**
 * deploy/, the kit to apply: the Kubernetes base rendered by the real kustomize (built from the Go
 * module proxy at the version test/system/deploy/tools/go.mod pins), as `kubectl apply -k` renders it, and
 * every object validated offline
 * against the Kubernetes API schemas (kubernetes-models); the Helm values' pod parts likewise; the
 * wiring a cluster needs (the projected SAT for aio-internal, the trust bundle, /data on a claim,
 * the client id from the pod name, the AIO_* environment the SDKs read); every pod held to the
 * restricted Pod Security Standard, with requests, limits and a NetworkPolicy; the secrets reach
 * settings.js as files, never as environment variables; settings.js loads with the context store and
 * a login; the authorization rules read as the emulator reads a BrokerAuthorization.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { AIO_VARIABLES, readAioEnvironment } from '../../../src/client'
import { readAuthenticationFile, readAuthorizationFile } from '../../../src/emulator/resource-file'
import {
  DEPLOY,
  readDockerfile,
  renderBase,
  renderHa,
  renderKustomization,
  renderOverlay,
  yamlDocuments,
  type K8sObject,
} from '../../support/deploy-kit'
import { podSpecOf, restrictedProfileViolations } from '../../support/restricted-profile'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { hashSync(password: string, rounds: number): string }

/** Validates against the Kubernetes API schema of its kind; throws the schema's complaint. */
function validate(object: { apiVersion: string; kind: string }): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const models = require(`kubernetes-models/${object.apiVersion}/${object.kind}`) as Record<
    string,
    new (o: unknown) => { validate(): void }
  >
  new models[object.kind]!(object).validate()
}

describe('deploy/: the kit renders and validates against the Kubernetes API schemas', () => {
  const objects = renderBase()
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely (and broken on purpose below); a wrong path fails the test
  const sts = byKind('StatefulSet')[0] as K8sObject & { spec: any }
  const pod = sts.spec.template.spec
  const container = pod.containers[0]

  it('renders a ServiceAccount, a StatefulSet, a Service, a NetworkPolicy and the settings ConfigMap in the AIO namespace, each valid', () => {
    assert.deepEqual(objects.map((o) => o.kind).sort(), [
      'ConfigMap',
      'NetworkPolicy',
      'Service',
      'ServiceAccount',
      'StatefulSet',
    ])
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
    const mountOf = (name: string) =>
      container.volumeMounts.find((m: { name: string }) => m.name === name)?.mountPath as string
    const env = Object.fromEntries(
      container.env
        .filter((e: { value?: string }) => e.value !== undefined)
        .map((e: { name: string; value: string }) => [e.name, e.value]),
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
    assert.equal(
      byKind('ConfigMap')[0]!.metadata.name,
      pod.volumes.find((v: { name: string }) => v.name === 'settings').configMap.name,
    )
    assert.ok(container.args.join(' ').includes(`${mountOf('settings')}/settings.js`))
  })

  /** deploy/base/settings.js as Node-RED loads it, with the Secret's files in `dir`. */
  function loadSettings(dir: string) {
    const file = join(DEPLOY, 'base', 'settings.js')
    const saved = process.env.NODE_RED_SECRETS_DIR
    process.env.NODE_RED_SECRETS_DIR = dir
    try {
      delete require.cache[require.resolve(file)]
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      return require(file) as {
        credentialSecret: string
        contextStorage: Record<string, { module: unknown; config: unknown }>
        adminAuth: { type: string; users: Array<{ password: string }> }
      }
    } finally {
      if (saved === undefined) delete process.env.NODE_RED_SECRETS_DIR
      else process.env.NODE_RED_SECRETS_DIR = saved
    }
  }

  it("settings.js loads this package's context store with an empty config, and asks for a login with the Secret's hash", () => {
    const dir = mkdtempSync(join(tmpdir(), 'aio-ss-secrets-'))
    try {
      const hash = bcrypt.hashSync('kit-admin', 4)
      writeFileSync(join(dir, 'adminPasswordHash'), `${hash}\n`)
      writeFileSync(join(dir, 'credentialSecret'), 'kit-secret\n')
      const settings = loadSettings(dir)
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      assert.equal(settings.contextStorage.statestore!.module, require('../../../dist/src/context'))
      assert.deepEqual(settings.contextStorage.statestore!.config, {})
      assert.equal(settings.adminAuth.type, 'credentials')
      assert.equal(settings.adminAuth.users[0]!.password, hash)
      assert.equal(settings.credentialSecret, 'kit-secret')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('settings.js stops with the file named when a secret is missing, or when the hash file holds more than a hash', () => {
    const dir = mkdtempSync(join(tmpdir(), 'aio-ss-secrets-'))
    try {
      writeFileSync(join(dir, 'credentialSecret'), 'kit-secret')
      assert.throws(
        () => loadSettings(dir),
        (err: Error) => err.message.includes(join(dir, 'adminPasswordHash')) && err.message.includes('ENOENT'),
      )
      // What `$(npx node-red-admin hash-pw)` captures: its prompt, then the hash.
      writeFileSync(join(dir, 'adminPasswordHash'), `Password: ${bcrypt.hashSync('kit-admin', 4)}`)
      assert.throws(() => loadSettings(dir), /holds no bcrypt hash alone/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('no container has a secret in its environment: the Secret is a read-only volume, the directory settings.js reads', () => {
    for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
      for (const e of c.env ?? [])
        assert.equal(e.valueFrom?.secretKeyRef, undefined, `${c.name}: ${e.name} comes from a Secret`)
      for (const e of c.envFrom ?? []) assert.equal(e.secretRef, undefined, `${c.name}: envFrom a Secret`)
      for (const e of c.env ?? [])
        assert.ok(!/SECRET$|PASSWORD|HASH$|TOKEN$/.test(e.name), `${c.name}: ${e.name} looks like a secret`)
    }
    const secretVolume = pod.volumes.find(
      (v: { secret?: { secretName: string } }) => v.secret?.secretName === 'node-red-secrets',
    )
    assert.ok(secretVolume, 'the Secret node-red-secrets is a volume')
    assert.equal(secretVolume.secret.defaultMode, 0o440)
    const mount = container.volumeMounts.find((m: { name: string }) => m.name === secretVolume.name)
    assert.equal(mount.readOnly, true)
    assert.equal(container.env.find((e: { name: string }) => e.name === 'NODE_RED_SECRETS_DIR').value, mount.mountPath)
  })

  it('every pod passes the restricted Pod Security Standard, with a read-only root filesystem and its writable paths as volumes', () => {
    for (const o of objects) {
      const spec = podSpecOf(o)
      if (spec) assert.deepEqual(restrictedProfileViolations(spec, `${o.kind}/${o.metadata.name}`), [])
    }
    const mounts = container.volumeMounts.map((m: { mountPath: string }) => m.mountPath)
    for (const writable of ['/data', '/tmp']) assert.ok(mounts.includes(writable), `${writable} is a volume`)
  })

  it('the HA overlay: the same objects, each valid and restricted, with two replicas started together, ready only when active, on settings-ha.js', () => {
    const ha = renderHa()
    assert.deepEqual(
      ha.map((o) => `${o.kind}/${o.metadata.name}`).sort(),
      objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(),
    )
    for (const o of ha) {
      assert.equal(o.metadata.namespace, 'azure-iot-operations')
      validate(o)
      const spec = podSpecOf(o)
      if (spec) assert.deepEqual(restrictedProfileViolations(spec, `ha ${o.kind}/${o.metadata.name}`), [])
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const haSts = ha.find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: any }
    assert.equal(haSts.spec.replicas, 2)
    assert.equal(haSts.spec.podManagementPolicy, 'Parallel')
    const c = haSts.spec.template.spec.containers[0]
    assert.equal(c.readinessProbe.httpGet.path, '/ha/active')
    assert.deepEqual(c.args, ['--settings', '/etc/node-red/settings-ha.js'])
    const settingsMap = ha.find((o) => o.kind === 'ConfigMap') as K8sObject & { data: Record<string, string> }
    assert.deepEqual(Object.keys(settingsMap.data).sort(), ['settings-ha.js', 'settings.js', 'shared-flows.js'])
    // Everything else of the base's container is kept.
    assert.deepEqual(c.securityContext, container.securityContext)
    assert.deepEqual(c.volumeMounts, container.volumeMounts)
    for (const e of container.env)
      assert.deepEqual(
        c.env.find((x: { name: string }) => x.name === e.name),
        e,
      )
  })

  it("renders with the real kustomize: a user's overlay of the base with images, replicas, labels and a JSON 6902 patch comes out as kubectl apply -k makes it, each object valid", () => {
    const dir = mkdtempSync(join(tmpdir(), 'overlay-'))
    try {
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        [
          'apiVersion: kustomize.config.k8s.io/v1beta1',
          'kind: Kustomization',
          `resources: [${JSON.stringify(relative(dir, join(DEPLOY, 'base')))}]`,
          'images: [{ name: node-red-aio-statestore, newName: registry.example/node-red-aio-statestore, newTag: "9.9.9" }]',
          'replicas: [{ name: node-red, count: 3 }]',
          'labels: [{ pairs: { team: edge } }]',
          'patches:',
          '  - target: { kind: StatefulSet, name: node-red }',
          '    patch: |-',
          '      - op: add',
          '        path: /spec/template/spec/priorityClassName',
          '        value: edge-critical',
          '',
        ].join('\n'),
      )
      const rendered = renderKustomization(dir)
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML
      const set = rendered.find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: any }
      assert.equal(set.spec.template.spec.containers[0].image, 'registry.example/node-red-aio-statestore:9.9.9')
      assert.equal(set.spec.replicas, 3)
      assert.equal(set.spec.template.spec.priorityClassName, 'edge-critical')
      for (const o of rendered) {
        assert.equal(o.metadata.labels?.team, 'edge', `${o.kind} labelled`)
        assert.equal(o.metadata.namespace, 'azure-iot-operations')
        validate(o)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('the HA and active/active overlays: the settings file each runs, and every file it loads from beside it, are in its ConfigMap; the shared one is the same file for both', () => {
    const shared: string[] = []
    for (const [overlay, file, replicas] of [
      ['ha', 'settings-ha.js', 2],
      ['active-active', 'settings-active-active.js', 3],
    ] as const) {
      const rendered = renderOverlay(overlay)
      for (const o of rendered) validate(o)
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
      const sts = rendered.find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: any }
      assert.equal(sts.spec.replicas, replicas, overlay)
      const args = sts.spec.template.spec.containers[0].args as string[]
      assert.deepEqual(args, ['--settings', `/etc/node-red/${file}`], overlay)
      const map = rendered.find((o) => o.kind === 'ConfigMap') as K8sObject & { data: Record<string, string> }
      // Mounted as one folder: a relative require of a settings file finds only what the ConfigMap holds.
      const loaded = (name: string): string[] => {
        const text = map.data[name]
        assert.ok(text !== undefined, `${overlay}: ${name} is in the ConfigMap ${Object.keys(map.data).join(', ')}`)
        return [...text.matchAll(/'\.\/([\w.-]+\.js)'/g)].map((m) => m[1]!)
      }
      const seen = new Set<string>()
      const walk = (name: string): void => {
        if (seen.has(name)) return
        seen.add(name)
        for (const next of loaded(name)) walk(next)
      }
      walk(file)
      assert.deepEqual([...seen].sort(), [file, 'settings.js', 'shared-flows.js'].sort(), overlay)
      assert.equal(map.data['shared-flows.js'], readFileSync(join(DEPLOY, 'base', 'shared-flows.js'), 'utf8'))
      shared.push(map.data['shared-flows.js'])
    }
    assert.equal(shared[0], shared[1], 'one shared module for both overlays')
  })

  it('the X.509 overlay: the certificate from a Secret instead of the token, the X.509 port in and out, each object valid and restricted', () => {
    const x509 = renderOverlay('x509')
    for (const o of x509) {
      validate(o)
      const spec = podSpecOf(o)
      if (spec) assert.deepEqual(restrictedProfileViolations(spec, `x509 ${o.kind}/${o.metadata.name}`), [])
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const xSts = x509.find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: any }
    const xPod = xSts.spec.template.spec
    const c = xPod.containers[0]
    const env = Object.fromEntries(
      c.env
        .filter((e: { value?: string }) => e.value !== undefined)
        .map((e: { name: string; value: string }) => [e.name, e.value]),
    )
    assert.equal(env.AIO_SAT_FILE, undefined, 'no token: one way of authenticating')
    assert.ok(!xPod.volumes.some((v: { name: string }) => v.name === 'mqtt-client-token'))
    const certMount = c.volumeMounts.find((m: { name: string }) => m.name === 'client-cert')
    assert.equal(
      xPod.volumes.find((v: { name: string }) => v.name === 'client-cert').secret.secretName,
      'node-red-client-cert',
    )
    assert.equal(dirname(env.AIO_TLS_CERT_FILE), certMount.mountPath)
    assert.equal(dirname(env.AIO_TLS_KEY_FILE), certMount.mountPath)
    const aio = readAioEnvironment({ ...env, AIO_MQTT_CLIENT_ID: 'node-red-0' })
    assert.equal(aio.certFile, env.AIO_TLS_CERT_FILE)
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const policy = x509.find((o) => o.kind === 'NetworkPolicy') as K8sObject & { spec: any }
    const out = policy.spec.egress.flatMap((r: { ports: Array<{ protocol: string; port: number }> }) =>
      r.ports.map((p) => `${p.protocol}/${p.port}`),
    )
    assert.deepEqual(out.sort(), [`TCP/${env.AIO_BROKER_TCP_PORT}`, 'TCP/53', 'UDP/53'].sort())
    assertEgressToPeersOnly(policy.spec.egress)
    // The broker's side: the certificate's subject gives the attribute the kit's rules match.
    const authn = readAuthenticationFile(join(DEPLOY, 'authorization', 'x509-authentication.yaml'))
    assert.deepEqual(authn.x509, [{ subject: 'CN = node-red', attributes: { group: 'node-red' } }])
  })

  it('the restricted-profile check finds each rule broken', () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a pod spec as parsed YAML, broken on purpose
    const breaks: Array<[string, (p: any) => void]> = [
      ['privilege escalation', (p) => (p.containers[0].securityContext.allowPrivilegeEscalation = true)],
      ['must drop ALL', (p) => (p.containers[0].securityContext.capabilities.drop = ['NET_RAW'])],
      ['only NET_BIND_SERVICE', (p) => (p.containers[0].securityContext.capabilities.add = ['SYS_ADMIN'])],
      ['seccomp', (p) => (p.containers[0].securityContext.seccompProfile = { type: 'Unconfined' })],
      [
        'running as non-root',
        (p) => {
          delete p.securityContext.runAsNonRoot
          delete p.containers[0].securityContext.runAsNonRoot
        },
      ],
      ['runAsUser must not be 0', (p) => (p.securityContext.runAsUser = 0)],
      ['privileged', (p) => (p.containers[0].securityContext.privileged = true)],
      ['host namespaces', (p) => (p.hostNetwork = true)],
      ['HostPath', (p) => p.volumes.push({ name: 'host', hostPath: { path: '/' } })],
      ['host ports', (p) => (p.containers[0].ports[0].hostPort = 1880)],
      ['readOnlyRootFilesystem', (p) => (p.containers[0].securityContext.readOnlyRootFilesystem = false)],
      ['sysctls', (p) => (p.securityContext.sysctls = [{ name: 'kernel.msgmax', value: '1' }])],
    ]
    for (const [rule, breakIt] of breaks) {
      const broken = structuredClone(pod)
      breakIt(broken)
      assert.ok(
        restrictedProfileViolations(broken).some((v) => v.includes(rule)),
        rule,
      )
    }
  })

  it("every container has CPU and memory requests and limits, and V8's heap stays under the memory limit", () => {
    const mebibytes = (q: string) => Number(/^(\d+)Mi$/.exec(q)?.[1] ?? assert.fail(`${q}: write memory in Mi`))
    for (const c of pod.containers) {
      for (const kind of ['requests', 'limits'])
        for (const r of ['cpu', 'memory']) assert.ok(c.resources?.[kind]?.[r], `${c.name}: resources.${kind}.${r}`)
      const heap = Number(
        /--max-old-space-size=(\d+)/.exec(
          c.env.find((e: { name: string }) => e.name === 'NODE_OPTIONS')?.value ?? '',
        )?.[1],
      )
      assert.ok(heap > 0 && heap < mebibytes(c.resources.limits.memory), 'the heap is capped below the memory limit')
      assert.ok(mebibytes(c.resources.requests.memory) <= mebibytes(c.resources.limits.memory))
    }
  })

  it("the NetworkPolicy selects the pod, lets in the editor's port only, and lets out the broker's port and DNS only", () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const policy = byKind('NetworkPolicy')[0] as K8sObject & { spec: any }
    assert.deepEqual(policy.spec.podSelector.matchLabels, sts.spec.template.metadata.labels)
    assert.deepEqual(policy.spec.policyTypes.sort(), ['Egress', 'Ingress'])
    const http = container.ports.find((p: { name: string }) => p.name === 'http').containerPort
    assert.deepEqual(
      policy.spec.ingress.flatMap((r: { ports: unknown[] }) => r.ports),
      [{ protocol: 'TCP', port: http }],
    )
    const out = policy.spec.egress.flatMap((r: { ports: Array<{ protocol: string; port: number }> }) =>
      r.ports.map((p) => `${p.protocol}/${p.port}`),
    )
    const brokerPort = container.env.find((e: { name: string }) => e.name === 'AIO_BROKER_TCP_PORT').value
    assert.deepEqual(out.sort(), [`TCP/${brokerPort}`, 'TCP/53', 'UDP/53'].sort())
    assertEgressToPeersOnly(policy.spec.egress)
  })

  it('the Helm values give the chart the same environment and volumes, each part valid', () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the chart's values, parsed YAML walked freely; a wrong path fails the test
    const [values] = yamlDocuments(join(DEPLOY, 'helm', 'values.yaml')) as Array<any>
    assert.equal(
      values.serviceAccount.annotations['aio-broker-auth/group'],
      byKind('ServiceAccount')[0]!.metadata.annotations!['aio-broker-auth/group'],
    )
    assert.deepEqual(values.env, container.env, 'the same environment as the StatefulSet')
    assert.equal(values.persistence.enabled, true)
    const chartPod = {
      securityContext: values.podSecurityContext,
      containers: [
        {
          name: 'node-red',
          securityContext: values.securityContext,
          ports: [{ containerPort: 1880 }],
          resources: values.resources,
        },
      ],
      volumes: values.extraVolumes,
    }
    assert.deepEqual(restrictedProfileViolations(chartPod, 'the chart'), [])
    assert.deepEqual(values.resources, container.resources)
    validate({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'node-red-chart' },
      spec: {
        containers: [
          {
            name: 'node-red',
            image: `${values.image.repository}:${values.image.tag}`,
            env: values.env,
            volumeMounts: values.extraVolumeMounts,
          },
        ],
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

  it('the image recipe builds on a pinned official Node-RED image from the tarball npm pack makes (test/system/deploy/image.test.ts runs it)', () => {
    const steps = readDockerfile(join(DEPLOY, 'image', 'Dockerfile'))
    assert.match(steps.find((s) => s.keyword === 'FROM')!.text, /^nodered\/node-red:\d+\.\d+\.\d+-\d+$/)
    assert.ok(
      steps.some((s) => s.keyword === 'COPY' && /node-red-contrib-aio-statestore-\$\{VERSION\}\.tgz/.test(s.text)),
    )
    assert.ok(!steps.some((s) => s.text.includes('--unsafe-perm')))
    assert.equal(
      container.image,
      `node-red-aio-statestore:${/^VERSION=(.*)$/.exec(steps.find((s) => s.keyword === 'ARG')!.text)![1]}`,
      "the StatefulSet names the recipe's version",
    )
  })

  it("the authorization rules read as the emulator reads a BrokerAuthorization, matching the ServiceAccount's attribute", () => {
    const policy = readAuthorizationFile(join(DEPLOY, 'authorization', 'rules.yaml'))
    assert.ok(policy.ruleCount > 0 && policy.grantsBrokerResources)
    const text = readFileSync(join(DEPLOY, 'authorization', 'rules.yaml'), 'utf8')
    for (const warning of [
      'az iot ops broker authz apply',
      'REPLACES the whole policy',
      'disconnects every connected client',
      'debugging and testing only',
    ])
      assert.ok(text.includes(warning), warning)
    assert.match(text, /- group: node-red/)
  })
})

/** Every egress rule names where it may go: a rule with ports and no `to` opens them on any address. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML
function assertEgressToPeersOnly(egress: any[]): void {
  for (const rule of egress) {
    assert.ok(
      Array.isArray(rule.to) && rule.to.length > 0,
      `an egress rule without peers opens ${JSON.stringify(rule.ports)} to any address`,
    )
    for (const peer of rule.to)
      assert.ok(
        peer.namespaceSelector || peer.podSelector || peer.ipBlock,
        `a peer names a selector or a CIDR: ${JSON.stringify(peer)}`,
      )
  }
}
