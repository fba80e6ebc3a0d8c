import { ShipkeyError } from "../../errors.js";
import {
  decodeBase64Text,
  type MinisignPublicKey,
  parsePublicKeyFile,
} from "../../lib/minisign.js";
import { assertMaxLength } from "../limits.js";
import { limits } from "../../contracts/vocabulary.js";

/**
 * A product's Tauri updater key, in the form `tauri.conf.json` holds it
 * (`plugins.updater.pubkey`): the base64 of the minisign public key file's text, which is also
 * what `tauri signer generate` writes to the `.pub` file.
 */

const where =
  "as in tauri.conf.json (plugins.updater.pubkey) or the .pub file of tauri signer generate";

/** The key as it is stored (surrounding whitespace removed); 400 naming the field otherwise. */
export function checkTauriPublicKey(value: string): { stored: string; keyId: string } {
  const stored = value.trim();
  assertMaxLength("tauriPublicKey", stored, limits.tauriPublicKey);
  if (stored === "") {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "tauriPublicKey is empty; send null to clear the product's key",
      { field: "tauriPublicKey" },
    );
  }
  // The bare key line of a minisign .pub file: base64 of 42 bytes beginning "Ed".
  if (/^RW[A-Za-z0-9+/]{54}$/.test(stored)) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `tauriPublicKey is a bare minisign key line; send the base64 of the whole public key file, ${where}`,
      { field: "tauriPublicKey" },
    );
  }
  const text = decodeBase64Text(stored);
  if (text === null) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      `tauriPublicKey must be the base64 of a minisign public key file, ${where}`,
      { field: "tauriPublicKey" },
    );
  }
  const key = parsePublicKeyFile(text);
  if (!key) {
    throw new ShipkeyError(
      "INVALID_FIELD_VALUE",
      "tauriPublicKey is not an Ed25519 minisign public key",
      { field: "tauriPublicKey" },
    );
  }
  return { stored, keyId: key.keyId };
}

/** The minisign key of a stored value, or null if it cannot be read (written by hand in SQL). */
export function readTauriPublicKey(stored: string): MinisignPublicKey | null {
  const text = decodeBase64Text(stored);
  return text === null ? null : parsePublicKeyFile(text);
}
