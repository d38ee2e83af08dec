// s3rver ships no types; this is the part the tests use.
declare module "s3rver" {
  import type { AddressInfo } from "node:net"
  import type { Server } from "node:http"

  interface S3rverOptions {
    readonly address?: string
    readonly port?: number
    readonly silent?: boolean
    readonly directory?: string
    readonly resetOnClose?: boolean
    readonly configureBuckets?: ReadonlyArray<{ readonly name: string; readonly configs?: ReadonlyArray<string> }>
  }

  class S3rver {
    constructor(options?: S3rverOptions)
    readonly httpServer: Server
    run(): Promise<AddressInfo>
    close(): Promise<void>
  }

  export default S3rver
}
