// Types for dev/flows.js (plain CommonJS so scripts/start.mjs needs no build step to use it).
export interface FlowNodeLike {
  id: string
  type: string
  z?: string
  [property: string]: unknown
}
export interface Example {
  name: string
  nodes: FlowNodeLike[]
}
export const CONFIG_TYPE: 'ss-config'
export function readExamples(examplesDir: string): Example[]
export function mergeExamples(examples: Example[]): FlowNodeLike[]
/** For npm start: inject-once nodes turned into buttons, and a first tab that says which to press. */
export function quietExamples(nodes: FlowNodeLike[]): FlowNodeLike[]
export function firesByItself(n: FlowNodeLike): boolean
export function pointAtBroker(nodes: FlowNodeLike[], brokerUrl: string, configType?: string): FlowNodeLike[]
