/** `wagate storage policy | show`: an account's storage policy (docs/storage.md). */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { StoragePolicySettings } from "@wagate/domain/OpsApi"
import * as Option from "effect/Option"
import * as Flags from "./Flags.js"
import { answer, group } from "./Operator.js"

const onOff = (name: string, description: string) =>
  Options.choice(name, ["on", "off"]).pipe(
    Options.map((v) => v === "on"),
    Options.optional,
    Options.withDescription(description)
  )

/** A positive whole number, or `off` for no limit. */
const limit = (name: string, description: string) =>
  Options.text(name).pipe(
    Options.filterMap(
      (v) => v === "off" ? Option.some(null) : /^[1-9]\d*$/.test(v) ? Option.some(Number(v)) : Option.none(),
      `--${name} must be a positive whole number or off`
    ),
    Options.optional,
    Options.withDescription(`${description}; off removes the limit`)
  )

const policy = Command.make("policy", {
  account: Flags.account,
  skipGroups: onOff("skip-groups", "Do not keep files from group chats"),
  skipUnknown: onOff("skip-unknown", "Do not keep files from people the number never wrote to"),
  unknownMaxMb: limit("unknown-max-mb", "Largest file kept from unknown senders, in MB"),
  chatDailyMb: limit("chat-daily-mb", "MB of files kept per chat and day"),
  ceilingBytes: limit("ceiling-bytes", "No file is kept once the account's usage would pass this many bytes"),
  retentionDays: limit("retention-days", "Files older than this many days are deleted")
}, (o) => {
  const payload = Object.fromEntries(
    Object.entries<Option.Option<boolean | number | null>>({
      skip_groups: o.skipGroups,
      skip_unknown: o.skipUnknown,
      unknown_max_mb: o.unknownMaxMb,
      chat_daily_mb: o.chatDailyMb,
      ceiling_bytes: o.ceilingBytes,
      retention_days: o.retentionDays
    }).flatMap(([key, value]) => Option.isSome(value) ? [[key, value.value]] : [])
  ) as Partial<typeof StoragePolicySettings.Type>
  return answer((ops) => ops.opsStorage.setPolicy({ path: { id: o.account }, payload }))
}).pipe(Command.withDescription("Change an account's storage policy; options not given keep their value"))

const show = Command.make("show", { account: Flags.account }, ({ account }) =>
  answer((ops) => ops.opsStorage.showPolicy({ path: { id: account } }))).pipe(
  Command.withDescription("An account's storage policy")
)

export const storageCommand = Command.make("storage", {}, group("storage")).pipe(
  Command.withDescription("An account's storage policy"),
  Command.withSubcommands([policy, show])
)
