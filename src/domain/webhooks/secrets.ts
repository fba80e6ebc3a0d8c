import { createHmac, randomBytes } from "node:crypto";
import {
  type EncryptedPrivateKey,
  type MasterKey,
  MasterKeyMismatchError,
  openUnderMasterKey,
  sealUnderMasterKey,
} from "../signing/key-material.js";

/** Standard Webhooks' secret form: `whsec_` and the base64 of the key bytes. */
export const webhookSecretPrefix = "whsec_";

/** A new signing secret: 32 random bytes, as Standard Webhooks' libraries read them. */
export function newWebhookSecret(): { text: string; bytes: Buffer } {
  const bytes = randomBytes(32);
  return { text: `${webhookSecretPrefix}${bytes.toString("base64")}`, bytes };
}

// Bound to the endpoint: a sealed secret copied onto another endpoint's row does not open.
const associatedData = (endpointId: string) =>
  Buffer.from(`shipkey-webhook-secret:v1:${endpointId}`);

export function sealWebhookSecret(
  masterKey: MasterKey,
  endpointId: string,
  bytes: Buffer,
): EncryptedPrivateKey {
  return sealUnderMasterKey(masterKey, associatedData(endpointId), bytes);
}

export function openWebhookSecret(
  masterKey: MasterKey,
  endpointId: string,
  sealed: EncryptedPrivateKey,
): Buffer {
  try {
    return openUnderMasterKey(masterKey, associatedData(endpointId), sealed);
  } catch {
    throw new MasterKeyMismatchError(
      `the master key does not open the secret of webhook endpoint ${endpointId}: it is not the master key that sealed it`,
    );
  }
}

/**
 * The webhook-signature header (Standard Webhooks): `v1,<base64 HMAC-SHA256>` over
 * `<id>.<timestamp>.<body>`, one per secret, separated by spaces (during a rotation's grace
 * period both the new and the previous secret sign).
 */
export function webhookSignature(
  secrets: readonly Buffer[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets
    .map(
      (secret) =>
        `v1,${createHmac("sha256", secret).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`,
    )
    .join(" ");
}
