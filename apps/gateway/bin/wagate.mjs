#!/usr/bin/env node
/**
 * `wagate`, the operator CLI (apps/gateway/src/cli.ts), as a command. `npm install` links it into
 * node_modules/.bin, so `npx wagate ...` runs it inside the repository; `npm link -w @wagate/gateway`
 * puts it on the PATH, where the shell completions (`wagate --completions bash|zsh|fish`) expect it.
 * It runs the sources as `npm run cli` does, through tsx.
 */
import "tsx"

await import("../src/cli.ts")
