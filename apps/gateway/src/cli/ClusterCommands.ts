/** `wagate cluster show`: runners, shards, entities, numbers by status, webhook and message backlogs. */
import * as Command from "@effect/cli/Command"
import { answer, group } from "./Operator.js"

const show = Command.make("show", {}, () => answer((ops) => ops.ops.cluster())).pipe(
  Command.withDescription(
    "Runners with their shards and entities, numbers by status (those no runner runs as WAITING_FOR_RUNNER or WAKING, listed in not_running; why those not WORKING are not), the webhook backlog and lag, the oldest unprocessed cluster message"
  )
)

export const clusterCommand = Command.make("cluster", {}, group("cluster")).pipe(
  Command.withDescription("The health of the cluster and of the numbers' entities"),
  Command.withSubcommands([show])
)
