export {
  type Activation,
  type ActivateResult,
  type CheckForUpdateOptions,
  type CheckoutResult,
  type DeactivateResult,
  type OfflineValidation,
  type OnlineValidation,
  type ShipkeyClientOptions,
  type StoredLicense,
  type UpdateArch,
  type UpdateInfo,
  type UpdatePlatform,
  type ValidateResult,
} from "./client-types.js";
export { ShipkeyClient } from "./client.js";
export { type CertificateClaims, certificateType, verifyCertificate } from "./certificate.js";
export {
  type SdkErrorCode,
  type ServerErrorCode,
  ShipkeyError,
  type ShipkeyErrorCode,
  type ShipkeyErrorOptions,
} from "./errors.js";
export { type FetchFunction, type RetryOptions } from "./http.js";
export {
  type KeySource,
  parsePublicKeys,
  PinnedKeys,
  type PublicKeys,
  RemoteKeys,
  thumbprint,
  type TrustedJwk,
} from "./keys.js";
export { hashMachineId, machineId, type MachineIdSources, readOsMachineId } from "./machine-id.js";
export { detectTamperedRuntime, type RuntimeSources } from "./runtime.js";
export { type SignedParts, signingString } from "./signature.js";
export { FileStorage, MemoryStorage, type ShipkeyStorage } from "./storage.js";
