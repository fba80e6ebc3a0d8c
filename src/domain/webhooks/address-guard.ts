import { BlockList, isIP } from "node:net";
import { ShipkeyError } from "../../errors.js";

/**
 * Addresses a webhook is never sent to unless WEBHOOKS_ALLOW_PRIVATE=true: private, loopback,
 * link-local, shared (CGNAT), unspecified, multicast and reserved ranges, IPv4 and IPv6
 * (IPv4-mapped IPv6 addresses are checked as the IPv4 address they carry; IPv4-compatible ones,
 * ::a.b.c.d, are refused whatever they carry).
 */
const blocked = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  blocked.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  // Unspecified, loopback and the deprecated IPv4-compatible form (::127.0.0.1).
  ["::", 96],
  ["64:ff9b::", 96],
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  blocked.addSubnet(network, prefix, "ipv6");
}

/** Whether `address` (an IP literal) is one a webhook must not reach by default. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1] !== undefined) return blocked.check(mapped[1], "ipv4");
  return blocked.check(address, "ipv6");
}

/**
 * An endpoint's URL, checked when it is given: absolute, https (http only with allowPrivate),
 * no credentials, and no private address literal unless allowed. A host name is checked again
 * after DNS resolution at every attempt (send.ts).
 */
export function checkEndpointUrl(text: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw urlError("url must be an absolute https URL");
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    throw urlError(allowPrivate ? "url must be an http or https URL" : "url must be an https URL");
  }
  if (url.username !== "" || url.password !== "") {
    throw urlError("url must not hold credentials");
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!allowPrivate && isIP(host) !== 0 && isPrivateAddress(host)) {
    throw urlError(
      "url points to a private, loopback or link-local address (allowed only with WEBHOOKS_ALLOW_PRIVATE=true)",
    );
  }
  return url.toString();
}

const urlError = (message: string) =>
  new ShipkeyError("INVALID_FIELD_VALUE", message, { field: "url" });
