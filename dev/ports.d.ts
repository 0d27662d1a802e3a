// Types for dev/ports.js (plain CommonJS so the benchmarks use it without a build step).
export function freePort(): Promise<number>
export function waitForPort(port: number, timeoutMs: number, what?: string, detail?: () => string): Promise<void>
