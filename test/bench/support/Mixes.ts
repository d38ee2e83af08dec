/**
 * The request mixes of the GET /messages benchmark, as lists of paths the load worker cycles
 * through. Every list is generated once per run from the seeded data, with a fixed seed, so the
 * baseline and the gateway answer exactly the same requests.
 */

export interface SeededFacts {
  readonly minId: number
  readonly maxId: number
  readonly numbers: ReadonlyArray<{ readonly id: number; readonly phone: string }>
  /** A sample of chats with the id range of their messages. */
  readonly chats: ReadonlyArray<{ readonly peer: string; readonly chatId: string; readonly minId: number; readonly maxId: number }>
}

export type MixName = "first" | "deep" | "filtered"

export const MIXES: ReadonlyArray<MixName> = ["first", "deep", "filtered"]

export const describe: Record<MixName, string> = {
  first: "the first page: `?limit=50`",
  deep: "deep pages: `?limit=50&before=<id drawn uniformly over the id range>`",
  filtered: "filters, six shapes in turn: `from=<id>&before`, `chat=<phone>`, `chat=<chat_id>&before`, " +
    "`direction=in&before`, `from=<phone>&since=<7 days ago>`, `direction=out&since=<90 days ago, date only>`"
}

/** A small deterministic generator (mulberry32): the same paths on every run. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const BASE = "/api/v1/messages?limit=50"
const COUNT = 4096

export const paths = (mix: MixName, facts: SeededFacts, now = new Date()): ReadonlyArray<string> => {
  const next = random(42)
  const between = (low: number, high: number) => low + Math.floor(next() * (high - low + 1))
  const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(next() * items.length)]
  const before = () => between(facts.minId + 1, facts.maxId)
  const daysAgo = (days: number) => new Date(now.getTime() - days * 86_400_000)
  const shapes: ReadonlyArray<() => string> = [
    () => `${BASE}&from=${pick(facts.numbers).id}&before=${before()}`,
    () => `${BASE}&chat=${pick(facts.chats).peer}`,
    () => {
      const chat = pick(facts.chats)
      return `${BASE}&chat=${encodeURIComponent(chat.chatId)}&before=${between(chat.minId + 1, chat.maxId)}`
    },
    () => `${BASE}&direction=in&before=${before()}`,
    () => `${BASE}&from=${pick(facts.numbers).phone}&since=${encodeURIComponent(daysAgo(7).toISOString())}`,
    () => `${BASE}&direction=out&since=${daysAgo(90).toISOString().slice(0, 10)}`
  ]
  return Array.from({ length: COUNT }, (_, i) => {
    switch (mix) {
      case "first":
        return BASE
      case "deep":
        return `${BASE}&before=${before()}`
      case "filtered":
        return shapes[i % shapes.length]()
    }
  })
}
