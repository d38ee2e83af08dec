/**
 * The process entry of a gateway under test: the gateway's own composition root, unchanged. A
 * separate entry only so that the process is told apart from gateways other people run on the
 * machine (`ps`, `pkill -f apps/gateway/src/main.ts`).
 */
import { launch, Main } from "../../../apps/gateway/src/main.js"

// main.ts runs itself only when it is the program; this entry is.
launch(Main)
