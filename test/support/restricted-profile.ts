/**
 * The restricted Pod Security Standard as a check: the rules of the Baseline and Restricted profiles
 * from Kubernetes' "Pod Security Standards" page
 * (https://kubernetes.io/docs/concepts/security/pod-security-standards/), the ones the admission
 * controller enforces with `pod-security.kubernetes.io/enforce: restricted`, applied to a pod spec.
 * One rule of the kit's own is added and named as such: a read-only root filesystem.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a pod spec as parsed YAML, walked freely
type Spec = any

/** Restricted: the only volume types allowed. */
const VOLUME_TYPES = [
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]
/** Baseline: the sysctls allowed. */
const SAFE_SYSCTLS = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]
const SELINUX_TYPES = ['container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']

/** The violations of the restricted profile (and of a read-only root filesystem) in a pod spec; empty when it passes. */
export function restrictedProfileViolations(pod: Spec, where = 'pod'): string[] {
  const out: string[] = []
  const podSc = pod.securityContext ?? {}
  const containers: Array<[string, Spec]> = [
    ...(pod.initContainers ?? []).map((c: Spec) => [`initContainers[${c.name}]`, c]),
    ...(pod.containers ?? []).map((c: Spec) => [`containers[${c.name}]`, c]),
    ...(pod.ephemeralContainers ?? []).map((c: Spec) => [`ephemeralContainers[${c.name}]`, c]),
  ]
  const fail = (rule: string, path: string) => out.push(`${where}: ${rule} (${path})`)

  // Baseline
  for (const ns of ['hostNetwork', 'hostPID', 'hostIPC'])
    if (pod[ns] === true) fail('host namespaces: must be unset or false', `spec.${ns}`)
  if (podSc.windowsOptions?.hostProcess === true)
    fail('HostProcess: must be unset or false', 'securityContext.windowsOptions.hostProcess')
  for (const v of pod.volumes ?? []) if (v.hostPath) fail('HostPath volumes: forbidden', `volumes[${v.name}]`)
  for (const s of podSc.sysctls ?? [])
    if (!SAFE_SYSCTLS.includes(s.name)) fail('sysctls: only the safe set', `securityContext.sysctls[${s.name}]`)
  const contexts: Array<[string, Spec]> = [
    ['securityContext', podSc],
    ...containers.map(([p, c]): [string, Spec] => [`${p}.securityContext`, c.securityContext ?? {}]),
  ]
  for (const [path, sc] of contexts) {
    if (sc.appArmorProfile && !['RuntimeDefault', 'Localhost'].includes(sc.appArmorProfile.type))
      fail('AppArmor: RuntimeDefault or Localhost', `${path}.appArmorProfile`)
    if (sc.seLinuxOptions) {
      if (sc.seLinuxOptions.type && !SELINUX_TYPES.includes(sc.seLinuxOptions.type))
        fail('SELinux: an allowed type', `${path}.seLinuxOptions.type`)
      if (sc.seLinuxOptions.user || sc.seLinuxOptions.role)
        fail('SELinux: user and role unset', `${path}.seLinuxOptions`)
    }
    if (sc.seccompProfile?.type === 'Unconfined') fail('Seccomp: not Unconfined', `${path}.seccompProfile`)
    if (sc.runAsUser === 0) fail('running as non-root user: runAsUser must not be 0', `${path}.runAsUser`)
  }
  for (const [path, c] of containers) {
    const sc = c.securityContext ?? {}
    if (sc.privileged === true) fail('privileged containers: forbidden', `${path}.securityContext.privileged`)
    if (sc.windowsOptions?.hostProcess === true)
      fail('HostProcess: must be unset or false', `${path}.securityContext.windowsOptions.hostProcess`)
    for (const p of c.ports ?? [])
      if (p.hostPort) fail('host ports: forbidden', `${path}.ports[${p.containerPort}].hostPort`)
    if (sc.procMount && sc.procMount !== 'Default')
      fail('/proc mount type: Default', `${path}.securityContext.procMount`)

    // Restricted
    if (sc.allowPrivilegeEscalation !== false)
      fail(
        'privilege escalation: allowPrivilegeEscalation must be false',
        `${path}.securityContext.allowPrivilegeEscalation`,
      )
    const nonRoot = sc.runAsNonRoot ?? podSc.runAsNonRoot
    if (nonRoot !== true)
      fail('running as non-root: runAsNonRoot must be true (pod or container)', `${path}.securityContext.runAsNonRoot`)
    const seccomp = sc.seccompProfile?.type ?? podSc.seccompProfile?.type
    if (!['RuntimeDefault', 'Localhost'].includes(seccomp))
      fail('seccomp: RuntimeDefault or Localhost (pod or container)', `${path}.securityContext.seccompProfile`)
    const caps = sc.capabilities ?? {}
    if (!(caps.drop ?? []).includes('ALL'))
      fail('capabilities: must drop ALL', `${path}.securityContext.capabilities.drop`)
    for (const cap of caps.add ?? [])
      if (cap !== 'NET_BIND_SERVICE')
        fail('capabilities: only NET_BIND_SERVICE may be added', `${path}.securityContext.capabilities.add`)

    // The kit's own rule: nothing writes into the image; writable paths are volumes.
    if (sc.readOnlyRootFilesystem !== true)
      fail("the kit's rule: readOnlyRootFilesystem must be true", `${path}.securityContext.readOnlyRootFilesystem`)
  }
  for (const v of pod.volumes ?? []) {
    const type = Object.keys(v).find((k) => k !== 'name')
    if (!type || !VOLUME_TYPES.includes(type))
      fail(`volume types: only ${VOLUME_TYPES.join(', ')}`, `volumes[${v.name}].${type}`)
  }
  return out
}

/** The pod spec of a workload object (`kind` and `spec`), or null for an object that runs no pod. */
export function podSpecOf(object: Spec): Spec {
  if (object.kind === 'Pod') return object.spec
  if (['StatefulSet', 'Deployment', 'DaemonSet', 'ReplicaSet', 'Job'].includes(object.kind))
    return object.spec.template.spec
  if (object.kind === 'CronJob') return object.spec.jobTemplate.spec.template.spec
  return null
}
