import { webcrypto } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { CompactSign, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { signingString, thumbprint } from "../../packages/client/src/index.js";

/**
 * A reference signer written from the published format (docs/client.md, version 2): a node:http
 * server that answers the license endpoints and signs them with node:crypto, independently of
 * the server's code. It also serves a JWKS and an update feed, and can announce endorsements.
 */

export type SigningKey = { kid: string; privateKey: webcrypto.CryptoKey; jwk: JWK };

/** A new Ed25519 key; its kid is its thumbprint unless `claimedKid` says otherwise. */
export async function signingKey(claimedKid?: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", {
    crv: "Ed25519",
    extractable: true,
  });
  const exported = await exportJWK(publicKey);
  const x = String(exported.x);
  const jwk: JWK = { kty: "OKP", crv: "Ed25519", x, kid: thumbprint(x), alg: "EdDSA", use: "sig" };
  return { kid: claimedKid ?? thumbprint(x), privateKey: privateKey as webcrypto.CryptoKey, jwk };
}

/** An endorsement of `endorsed` by `by`, as the server makes it (or as a forger would). */
export async function endorse(
  by: SigningKey,
  endorsed: SigningKey,
  options: { product?: string; typ?: string; kid?: string } = {},
): Promise<string> {
  const payload = {
    product: options.product ?? "app",
    key: {
      kty: "OKP",
      crv: "Ed25519",
      x: endorsed.jwk.x,
      kid: options.kid ?? endorsed.jwk.kid,
    },
    iat: Math.floor(Date.now() / 1000),
  };
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({
      alg: "EdDSA",
      kid: by.kid,
      typ: options.typ ?? "shipkey-key-endorsement+jwt",
    })
    .sign(by.privateKey);
}

export interface Behaviour {
  key: SigningKey;
  /** Sign with this nonce instead of the request's (a replayed answer). */
  nonce?: string;
  refuse?: { status: number; code: string; error: string; signed: boolean };
  offlineSeconds: number;
  /** Sent as Shipkey-Key-Endorsements on every signed answer. */
  endorsements?: string[];
  /** Answered by GET /api/products/app/keys. */
  jwks?: { keys: Array<Record<string, unknown>> };
  /** The download URL the update feed offers. */
  updateUrl?: string;
  /** Names this machine instead of the one that asked (activate, deactivate). */
  answerMachineId?: string;
  /** The header's version field (default "2"). */
  version?: string;
}

export async function referenceServer(behaviour: Behaviour) {
  const requests: Array<{ path: string; body: string }> = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      void (async () => {
        const path = (request.url ?? "/").split("?")[0] ?? "/";
        const requestBody = Buffer.concat(chunks);
        requests.push({ path, body: requestBody.toString() });
        if (request.method === "GET") {
          if (path === "/api/products/app/keys") {
            response.writeHead(200, { "content-type": "application/json" });
            response.end(JSON.stringify(behaviour.jwks ?? { keys: [behaviour.key.jwk] }));
            return;
          }
          response.writeHead(200, { "content-type": "application/json" });
          response.end(
            JSON.stringify({
              version: "2.0.0",
              channel: "STABLE",
              notes: null,
              pubDate: new Date().toISOString(),
              url: behaviour.updateUrl ?? "https://downloads.example.com/app-2.0.0.zip",
              signature: null,
              sha512: null,
              fileSize: null,
            }),
          );
          return;
        }
        const input = JSON.parse(requestBody.toString()) as Record<string, string>;
        const machineId = behaviour.answerMachineId ?? input.machineId;
        let status = 200;
        let body: Record<string, unknown>;
        let signed = true;
        if (behaviour.refuse) {
          ({ status } = behaviour.refuse);
          signed = behaviour.refuse.signed;
          body = { error: behaviour.refuse.error, code: behaviour.refuse.code, valid: false };
        } else if (path.endsWith("/activate")) {
          body = {
            success: true,
            message: "Machine activated",
            activation: { machineId, machineName: null, activatedAt: new Date().toISOString() },
            activeMachines: 1,
            maxMachines: 3,
          };
        } else if (path.endsWith("/validate")) {
          body = {
            valid: true,
            edition: "pro",
            editionName: "Pro",
            features: ["export"],
            expiresAt: null,
            maxMachines: 3,
            activeMachines: 1,
          };
        } else if (path.endsWith("/checkout")) {
          const now = Math.floor(Date.now() / 1000);
          const exp = now + behaviour.offlineSeconds;
          const certificate = await new SignJWT({
            product: input.productSlug,
            edition: "pro",
            editionName: "Pro",
            features: ["export"],
            maxMachines: 3,
            licenseExpiresAt: null,
          })
            .setProtectedHeader({
              alg: "EdDSA",
              kid: behaviour.key.kid,
              typ: "shipkey-license+jwt",
            })
            .setSubject(String(input.machineId))
            .setIssuedAt(now)
            .setExpirationTime(exp)
            .sign(behaviour.key.privateKey);
          body = { success: true, certificate, expiresAt: new Date(exp * 1000).toISOString() };
        } else {
          body = { success: true, message: "Machine deactivated", machineId };
        }
        const bytes = Buffer.from(JSON.stringify(body));
        const date = new Date().toUTCString();
        const headers: Record<string, string> = { "content-type": "application/json", date };
        if (signed) {
          const nonce = behaviour.nonce ?? String(request.headers["shipkey-nonce"] ?? "");
          const data = new TextEncoder().encode(
            signingString({ path, status, date, nonce, requestBody, body: bytes }),
          );
          const signature = Buffer.from(
            await webcrypto.subtle.sign("Ed25519", behaviour.key.privateKey, data),
          ).toString("base64");
          headers["shipkey-signature"] =
            `keyid="${behaviour.key.kid}", algorithm="ed25519", version="${behaviour.version ?? "2"}", signature="${signature}"`;
          if (behaviour.endorsements?.length) {
            headers["shipkey-key-endorsements"] = behaviour.endorsements.join(", ");
          }
        }
        response.writeHead(status, headers);
        response.end(bytes);
      })();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close, requests };
}
