import {
  type EncryptedPrivateKey,
  type MasterKey,
  MasterKeyMismatchError,
  openUnderMasterKey,
  sealUnderMasterKey,
} from "../signing/key-material.js";

// Bound to the integration and the secret's id: a sealed secret copied onto another row does
// not open.
const associatedData = (integrationId: string, secretId: string) =>
  Buffer.from(`shipkey-integration-secret:v1:${integrationId}:${secretId}`);

/** A provider's signing secret (its text as the provider shows it), sealed under the master key. */
export function sealIntegrationSecret(
  masterKey: MasterKey,
  integrationId: string,
  secretId: string,
  secret: string,
): EncryptedPrivateKey {
  return sealUnderMasterKey(
    masterKey,
    associatedData(integrationId, secretId),
    Buffer.from(secret, "utf8"),
  );
}

export function openIntegrationSecret(
  masterKey: MasterKey,
  integrationId: string,
  secretId: string,
  sealed: EncryptedPrivateKey,
): string {
  try {
    return openUnderMasterKey(masterKey, associatedData(integrationId, secretId), sealed).toString(
      "utf8",
    );
  } catch {
    throw new MasterKeyMismatchError(
      `the master key does not open secret ${secretId} of integration ${integrationId}: it is not the master key that sealed it`,
    );
  }
}
