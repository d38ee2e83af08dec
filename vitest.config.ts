import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

/** Multi-process cluster tests that measure or count reconnects: run last, one at a time. */
const CLUSTER = ["test/cluster/failover.test.ts", "test/cluster/cold-start.test.ts"]

export default defineConfig({
  test: {
    exclude: ["test/bench/**", "**/node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Suites share one PostgreSQL and Redis; each suite uses its own database / key prefix.
    fileParallelism: true,
    // Most files wait on what they started (gateways, child processes, PostgreSQL), so two run at
    // once even on two cores, where vitest's default (cores - 1) would run them one at a time:
    // 574 s against 988 s for the whole suite on the 2-core machine.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        test: {
          name: "suite",
          include: ["packages/*/test/**/*.test.ts", "apps/*/test/**/*.test.ts", "test/**/*.test.ts"],
          exclude: ["test/bench/**", "**/node_modules/**", ...CLUSTER],
          sequence: { groupOrder: 0 }
        }
      },
      {
        // The multi-process tests (WAGATE_CLUSTER_TEST=0 leaves them out) start five processes each,
        // measure how fast numbers come back and count their reconnects: they run after every other
        // file, one at a time, so that no other work starves their runners.
        extends: true,
        test: { name: "cluster", include: CLUSTER, poolOptions: { forks: { singleFork: true } }, sequence: { groupOrder: 1 } }
      }
    ]
  }
})
