import { PatternError } from './principal'

/**
 * What is wrong in a resource document, and where: the path of the field (`["spec",
 * "authorizationPolicies", "rules", 2, "stateStoreResources", 0, "keyType"]`) and the index of the
 * document in its file. The adapter that read the file turns the path into a line.
 */
export class ResourceError extends Error {
  constructor(
    readonly document: number,
    readonly path: ReadonlyArray<string | number>,
    readonly reason: string,
  ) {
    super(`${pathText(path) || 'the document'}: ${reason}`)
    this.name = 'ResourceError'
  }
}

/** `spec.authorizationPolicies.rules[2].keyType` */
export function pathText(path: ReadonlyArray<string | number>): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('')
}

/** Field checks that throw a ResourceError at the right path. */
export class Fields {
  constructor(
    readonly document: number,
    readonly path: ReadonlyArray<string | number>,
  ) {}

  at(...more: Array<string | number>): Fields {
    return new Fields(this.document, [...this.path, ...more])
  }

  fail(reason: string): never {
    throw new ResourceError(this.document, this.path, reason)
  }

  object(value: unknown, allowed: readonly string[]): Record<string, unknown> {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) this.fail('must be an object (a map)')
    const record = value as Record<string, unknown>
    for (const name of Object.keys(record)) {
      if (!allowed.includes(name)) this.at(name).fail(`unknown field; expected one of ${allowed.join(', ')}`)
    }
    return record
  }

  list(value: unknown): unknown[] {
    if (!Array.isArray(value)) this.fail('must be a list')
    return value
  }

  strings(value: unknown): string[] {
    return this.list(value).map((item, i) => (typeof item === 'string' ? item : this.at(i).fail('must be a string')))
  }

  /** A pattern compiled here, its PatternError reported at this path. */
  pattern<T>(make: () => T): T {
    try {
      return make()
    } catch (err) {
      if (err instanceof PatternError) this.fail(err.message)
      throw err
    }
  }

  oneOf<T extends string>(value: unknown, choices: readonly T[]): T {
    if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as T
    this.fail(`must be one of ${choices.join(', ')}${value === undefined ? '' : `, not ${JSON.stringify(value)}`}`)
  }
}
