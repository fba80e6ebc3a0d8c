import { ShipkeyError } from "../../errors.js";
import {
  decodeBase64Text,
  globalSignatureVerifies,
  isBase64,
  type MinisignPublicKey,
  parseSignatureFile,
} from "../../lib/minisign.js";
import { readTauriPublicKey } from "../products/tauri-public-key.js";
import { type Arch, type Platform } from "../../contracts/vocabulary.js";

/** What the check reads of a publish entry. */
interface SignedEntry {
  platform: Platform;
  arch: Arch;
  signature: string | null;
}

/**
 * While a product holds a Tauri public key, every signature published for it must be a base64
 * minisign signature by that key (docs/reference/publishing-and-releases.md): the key id matches and the global
 * signature verifies. Entries without a signature pass (the Tauri feed never offers them).
 * Throws TAURI_SIGNATURE_INVALID naming the first entry that fails.
 */
export function checkTauriSignatures(tauriPublicKey: string | null, entries: SignedEntry[]): void {
  if (tauriPublicKey === null || entries.every((entry) => entry.signature === null)) return;
  const key = readTauriPublicKey(tauriPublicKey);
  if (!key) {
    throw new ShipkeyError(
      "TAURI_SIGNATURE_INVALID",
      "the product's Tauri public key cannot be read; set it again",
    );
  }
  entries.forEach((entry, index) => {
    const problem = entry.signature === null ? null : signatureProblem(entry.signature, key);
    if (problem !== null) {
      throw new ShipkeyError(
        "TAURI_SIGNATURE_INVALID",
        `releases[${index}] (${entry.platform}/${entry.arch}): ${problem}`,
      );
    }
  });
}

/** Why `signature` is not a minisign signature by `key`, or null when it is. */
export function signatureProblem(signature: string, key: MinisignPublicKey): string | null {
  if (!isBase64(signature)) {
    if (signature.startsWith("untrusted comment:")) {
      return "signature is not base64 (send the .sig file's contents as they are, not decoded)";
    }
    if (looksLikePath(signature)) {
      return "signature is not base64 (it looks like a file path: send the contents of the .sig file)";
    }
    return "signature is not base64";
  }
  const text = decodeBase64Text(signature);
  const parsed = text === null ? null : parseSignatureFile(text);
  if (!parsed) return "not a minisign signature (send the contents of the .sig file)";
  if (parsed.keyId !== key.keyId) {
    return `signed by key id ${parsed.keyId}, the product's key is ${key.keyId}`;
  }
  if (!globalSignatureVerifies(parsed, key)) {
    return "global signature does not verify (the trusted comment was altered or the signature is damaged)";
  }
  return null;
}

/** A path has separators and characters base64 never holds (a dot, a backslash, a drive colon). */
function looksLikePath(value: string): boolean {
  return /\.sig$/i.test(value) || (/[/\\]/.test(value) && /[.\\~:]/.test(value));
}
