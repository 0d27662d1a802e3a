import { open } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * Holds every FileHandle.datasync of this process (the emulator's persistence journal syncs with
 * it) until the returned function is called: a record is written to the file but not synced, so
 * nothing that waits for it (its answer, its notifications) goes out. `dir`: a scratch directory
 * to open a probe file in. The returned function restores datasync and may be called again.
 */
export async function holdSyncs(dir: string): Promise<() => void> {
  const probe = await open(join(dir, 'probe'), 'w')
  const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> }
  await probe.close()
  const original = proto.datasync
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  proto.datasync = async function (this: unknown) {
    await released
    return original.call(this)
  }
  return () => {
    proto.datasync = original
    release()
  }
}
