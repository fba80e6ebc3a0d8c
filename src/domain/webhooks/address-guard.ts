import { BlockList, isIP } from "node:net";
import { ShipkeyError } from "../../errors.js";

/**
 * The ranges a webhook is never sent to unless WEBHOOKS_ALLOW_PRIVATE=true: every entry of
 * IANA's IPv4 and IPv6 Special-Purpose Address Registries that is not globally reachable (a
 * block with a few reachable addresses inside is refused whole), multicast, the deprecated and
 * tunnelled forms that lead to IPv4 or other networks (IPv4-compatible, IPv4-mapped, 6to4,
 * site-local), and the IPv6 space IANA has not allocated for unicast (all but 2000::/3).
 */
export const refusedRanges: ReadonlyArray<{ network: string; prefix: number; name: string }> = [
  { network: "0.0.0.0", prefix: 8, name: "this network" },
  { network: "10.0.0.0", prefix: 8, name: "private use" },
  { network: "100.64.0.0", prefix: 10, name: "shared address space (CGNAT)" },
  { network: "127.0.0.0", prefix: 8, name: "loopback" },
  { network: "169.254.0.0", prefix: 16, name: "link-local" },
  { network: "172.16.0.0", prefix: 12, name: "private use" },
  { network: "192.0.0.0", prefix: 24, name: "IETF protocol assignments" },
  { network: "192.0.2.0", prefix: 24, name: "documentation (TEST-NET-1)" },
  { network: "192.88.99.0", prefix: 24, name: "6to4 relay anycast (deprecated)" },
  { network: "192.168.0.0", prefix: 16, name: "private use" },
  { network: "198.18.0.0", prefix: 15, name: "benchmarking" },
  { network: "198.51.100.0", prefix: 24, name: "documentation (TEST-NET-2)" },
  { network: "203.0.113.0", prefix: 24, name: "documentation (TEST-NET-3)" },
  { network: "224.0.0.0", prefix: 4, name: "multicast" },
  { network: "240.0.0.0", prefix: 4, name: "reserved, and limited broadcast" },
  { network: "::", prefix: 96, name: "unspecified, loopback, IPv4-compatible (deprecated)" },
  { network: "::ffff:0:0", prefix: 96, name: "IPv4-mapped" },
  { network: "64:ff9b:1::", prefix: 48, name: "local-use IPv4/IPv6 translation" },
  { network: "100::", prefix: 64, name: "discard-only" },
  { network: "100:0:0:1::", prefix: 64, name: "dummy prefix" },
  { network: "2001::", prefix: 23, name: "IETF protocol assignments (Teredo, ORCHID…)" },
  { network: "2001:db8::", prefix: 32, name: "documentation" },
  { network: "2002::", prefix: 16, name: "6to4" },
  { network: "3fff::", prefix: 20, name: "documentation" },
  { network: "5f00::", prefix: 16, name: "segment routing (SRv6) SIDs" },
  { network: "fc00::", prefix: 7, name: "unique-local" },
  { network: "fe80::", prefix: 10, name: "link-local" },
  { network: "fec0::", prefix: 10, name: "site-local (deprecated)" },
  { network: "ff00::", prefix: 8, name: "multicast" },
  // IANA's IPv6 Address Space registry: global unicast is 2000::/3 only.
  { network: "::", prefix: 3, name: "not global unicast" },
  { network: "4000::", prefix: 2, name: "not global unicast" },
  { network: "8000::", prefix: 1, name: "not global unicast" },
];

// One list per family: a BlockList matches an IPv4 rule against the IPv4-mapped IPv6 form and
// back, so ::ffff:0:0/96 in the IPv4 addresses' list would refuse every IPv4 address.
const refusedIPv4 = new BlockList();
const refusedIPv6 = new BlockList();
for (const { network, prefix } of refusedRanges) {
  if (isIP(network) === 4) refusedIPv4.addSubnet(network, prefix, "ipv4");
  else refusedIPv6.addSubnet(network, prefix, "ipv6");
}

/**
 * The well-known NAT64 prefix (in ::/3, yet globally reachable): judged by the IPv4 address it
 * carries, as the translator connects to that.
 */
const nat64 = new BlockList();
nat64.addSubnet("64:ff9b::", 96, "ipv6");

/** Whether `address` (an IP literal) is one a webhook must not reach by default. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return refusedIPv4.check(address, "ipv4");
  if (family !== 6) return true;
  if (nat64.check(address, "ipv6")) return refusedIPv4.check(lastIPv4Of(address), "ipv4");
  return refusedIPv6.check(address, "ipv6");
}

/** The IPv4 address in the last 32 bits of an IPv6 address (a valid literal, zone allowed). */
function lastIPv4Of(address: string): string {
  const text = address.split("%")[0] ?? "";
  const dotted = text.slice(text.lastIndexOf(":") + 1);
  if (isIP(dotted) === 4) return dotted;
  // The last two groups: of the whole address, or of what follows "::" after zeros it stands for.
  const end = text.includes("::") ? `0:0:${text.split("::")[1] ?? ""}` : text;
  const [high = 0, low = 0] = end
    .split(":")
    .filter((group) => group !== "")
    .slice(-2)
    .map((group) => Number.parseInt(group, 16));
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
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
