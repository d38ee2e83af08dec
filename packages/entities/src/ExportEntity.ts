/**
 * The protocol of an archive export's entity (id = export id). One export is one entity, sharded
 * over the runners like the numbers, so a long archive never holds up a number. `Run` is a
 * persisted message: it is stored before anyone acts on it and delivered again to whichever
 * runner owns the shard after the one running it is lost, so an accepted export always ends.
 *
 * Old and new processes exchange these messages during a rolling upgrade: a release only adds
 * optional fields to them (see this package's index).
 *
 * @since 1.0.0
 */
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import * as Schema from "effect/Schema"

/** @since 1.0.0 */
export const ExportEntity = Entity.make("Export", [
  /**
   * Assembles the archive and records how the export ended. Once per export (the export id is the
   * primary key); a repeat after a lost runner starts the archive over.
   */
  Rpc.make("Run", {
    payload: { exportId: Schema.Int },
    primaryKey: ({ exportId }) => String(exportId)
  }).annotate(ClusterSchema.Persisted, true)
])
