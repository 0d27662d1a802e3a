/**
 * The one reading of a whole number, for options, command-line flags and node settings alike: a
 * safe integer of at least `min`, given as a number or as decimal digits (surrounding spaces
 * allowed, as form fields and `${ENV}` substitutions bring them). Anything else is undefined; each
 * caller turns that into its own typed error or default.
 */
export function wholeNumber(value: unknown, min = 0): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\s*\d{1,16}\s*$/.test(value)
        ? Number(value)
        : NaN
  return Number.isSafeInteger(n) && n >= min ? n : undefined
}
