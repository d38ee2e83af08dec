/**
 * How every long-running process of the project runs its TypeScript sources:
 *
 *   node --import ./runtime/typescript.mjs apps/gateway/src/main.ts
 *
 * tsx resolves the sources (`.js` specifiers to `.ts` files, the workspace packages) and loads
 * whatever is not ours; our own sources are compiled by `typescript-hooks.mjs`, which differs from
 * tsx in one setting: it does not wrap every named function in a call that sets its `name`
 * (esbuild's `keepNames`, which tsx always turns on). That call redefines a property of every
 * function object as it is created, which moves the function's properties to a dictionary of
 * 256 bytes of its own: for a gateway of 2,000 numbers about 35 MB of heap, and a property
 * redefinition for every function made on a request.
 * Without it, V8 names the functions itself (`const send = () => ...` is named `send`), so stack
 * traces and profiles keep their names. docs/performance.md, twelfth round.
 */
import "tsx"
import { register } from "node:module"

register("./typescript-hooks.mjs", import.meta.url)
