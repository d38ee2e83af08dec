/**
 * A local HTTP server with the files tests attach to messages: small images, a document, a
 * voice note, one that is too large, one that is not what it claims, one that never finishes.
 * Each file is served with real first bytes for the type it claims (the gateway decides an
 * attachment's type from its bytes), except the two that are there to claim a wrong one.
 */
import * as Effect from "effect/Effect"
import { createServer, type ServerResponse } from "node:http"

/** The smallest valid PNG (1x1). */
export const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082",
  "hex"
)
export const PDF = Buffer.from("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n")
/** An Ogg page whose first packet is an Opus header: what WhatsApp voice notes are. */
export const OGG = Buffer.concat([
  Buffer.from("OggS"),
  Buffer.from([0, 2]),
  Buffer.alloc(20),
  Buffer.from([1, 19]),
  Buffer.from("OpusHead"),
  Buffer.from([1, 1, 0x38, 1, 0x80, 0xbb, 0, 0, 0, 0, 0]),
  Buffer.alloc(100, 1)
])
/** A login page, what a link that needs a session answers instead of the file. */
export const HTML = Buffer.from("<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Sign in</body></html>\n")
export const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from("ftypmp42"), Buffer.alloc(200, 2)])

export interface FileServer {
  readonly url: (path: string) => string
  /** Releases every request held by /slow.png. */
  readonly release: () => void
  /** Requests /slow.png has received and holds. */
  readonly held: () => number
}

export const start = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<FileServer & { close: () => void }>((resolve) => {
      let waiting: Array<ServerResponse> = []
      const server = createServer((req, res) => {
        const send = (type: string, body: Buffer, extra: Record<string, string> = {}) => {
          res.writeHead(200, { "content-type": type, "content-length": String(body.length), ...extra })
          res.end(body)
        }
        switch (req.url) {
          case "/image.png":
            return send("image/png", PNG)
          case "/report.pdf":
            return send("application/pdf", PDF, { "content-disposition": "attachment; filename=\"report.pdf\"" })
          case "/voice.ogg":
            return send("audio/ogg", OGG)
          case "/clip.mp4":
            return send("video/mp4", MP4)
          case "/page.html":
            return send("text/html", HTML)
          // A PNG that the server calls a JPEG, and an error page that it calls one.
          case "/photo.jpg":
            return send("image/jpeg", PNG)
          case "/login.jpg":
            return send("image/jpeg", HTML)
          case "/huge.png":
            res.writeHead(200, { "content-type": "image/png", "content-length": String(6 * 1024 * 1024) })
            return res.end()
          case "/slow.png":
            waiting.push(res)
            return
          default:
            res.writeHead(404)
            return res.end()
        }
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as { port: number }).port
        resolve({
          url: (path) => `http://127.0.0.1:${port}${path}`,
          release: () => {
            for (const res of waiting) {
              res.writeHead(200, { "content-type": "image/png", "content-length": String(PNG.length) })
              res.end(PNG)
            }
            waiting = []
          },
          held: () => waiting.length,
          close: () => {
            for (const res of waiting) res.destroy()
            server.closeAllConnections()
            server.close()
          }
        })
      })
    })
  ),
  (server) => Effect.sync(() => server.close())
)
