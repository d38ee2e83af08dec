import { defineConfig } from "vitest/config"

const FAILOVER = "test/cluster/failover.test.ts"

export default defineConfig({
  test: {
    exclude: ["test/bench/**", "**/node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Suites share one PostgreSQL and Redis; each suite uses its own database / key prefix.
    fileParallelism: true,
    projects: [
      {
        extends: true,
        test: {
          name: "suite",
          include: ["packages/*/test/**/*.test.ts", "apps/*/test/**/*.test.ts", "test/**/*.test.ts"],
          exclude: ["test/bench/**", "**/node_modules/**", FAILOVER],
          sequence: { groupOrder: 0 }
        }
      },
      {
        // The multi-process failover test (WAGATE_CLUSTER_TEST=0 leaves it out) starts five processes
        // and measures how fast numbers come back: it runs after every other file, alone.
        extends: true,
        test: { name: "cluster", include: [FAILOVER], sequence: { groupOrder: 1 } }
      }
    ]
  }
})
