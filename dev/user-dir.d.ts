// Types for dev/user-dir.js (plain CommonJS, required by dev/settings.js).
export const PACKAGE_NAME: string
export function linkPackage(userDir: string, root: string): 'linked' | 'kept' | 'installed'
