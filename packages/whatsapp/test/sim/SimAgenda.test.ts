/**
 * The simulated network's timetable: steps run in time order, steps due at the same instant in
 * the order they were planned, and a reset forgets message steps but keeps connection steps.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as SimAgenda from "../../src/sim/SimAgenda.js"

describe("SimAgenda", () => {
  it.scoped("runs steps by time, then by planning order, however they were planned", () =>
    Effect.gen(function*() {
      const agenda = yield* SimAgenda.make
      const ran: Array<string> = []
      // Planned out of order, with ties: a shuffled timetable of 500 steps at 50 instants.
      const planned = Array.from({ length: 500 }, (_, i) => ({ at: 1000 + ((i * 37) % 50) * 10, name: `s${i}` }))
      for (const step of planned) agenda.schedule(step.at, "message", (now) => ran.push(`${now}:${step.name}`))
      yield* TestClock.adjust(2000)
      const expected = [...planned]
        .map((step, order) => ({ ...step, order }))
        .sort((a, b) => a.at - b.at || a.order - b.order)
        .map((step) => `${step.at}:${step.name}`)
      assert.deepStrictEqual(ran, expected)
    }))

  it.scoped("a step planned earlier than the one it waits for runs first", () =>
    Effect.gen(function*() {
      const agenda = yield* SimAgenda.make
      const ran: Array<string> = []
      agenda.schedule(500, "message", () => ran.push("late"))
      yield* TestClock.adjust(100)
      agenda.schedule(300, "message", () => ran.push("early"))
      yield* TestClock.adjust(250)
      assert.deepStrictEqual(ran, ["early"])
      yield* TestClock.adjust(200)
      assert.deepStrictEqual(ran, ["early", "late"])
    }))

  it.scoped("dropMessages forgets message steps and keeps connection steps in order", () =>
    Effect.gen(function*() {
      const agenda = yield* SimAgenda.make
      const ran: Array<string> = []
      for (let i = 0; i < 40; i++) {
        agenda.schedule(100 + i * 10, i % 3 === 0 ? "connection" : "message", () => ran.push(String(i)))
      }
      agenda.dropMessages()
      yield* TestClock.adjust(1000)
      assert.deepStrictEqual(ran, Array.from({ length: 14 }, (_, k) => String(k * 3)))
    }))

  it.scoped("a step that dies is logged and the next steps still run", () =>
    Effect.gen(function*() {
      const agenda = yield* SimAgenda.make
      const ran: Array<string> = []
      agenda.schedule(10, "message", () => {
        throw new Error("boom")
      })
      agenda.schedule(20, "message", () => ran.push("after"))
      yield* TestClock.adjust(100)
      assert.deepStrictEqual(ran, ["after"])
    }))
})
