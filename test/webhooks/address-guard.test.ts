import { describe, expect, it } from "vitest";
import { isPrivateAddress, refusedRanges } from "../../src/domain/webhooks/address-guard.js";

/**
 * Each refused range of IANA's special-purpose registries (and the IPv6 space outside global
 * unicast): its first and last address, and a globally reachable address beside it (the nearest
 * one where the neighbouring addresses are refused too).
 */
const ranges: Array<[range: string, first: string, last: string, global: string]> = [
  ["0.0.0.0/8", "0.0.0.0", "0.255.255.255", "1.0.0.0"],
  ["10.0.0.0/8", "10.0.0.0", "10.255.255.255", "11.0.0.0"],
  ["100.64.0.0/10", "100.64.0.0", "100.127.255.255", "100.128.0.0"],
  ["127.0.0.0/8", "127.0.0.0", "127.255.255.255", "126.255.255.255"],
  ["169.254.0.0/16", "169.254.0.0", "169.254.255.255", "169.253.255.255"],
  ["172.16.0.0/12", "172.16.0.0", "172.31.255.255", "172.32.0.0"],
  ["192.0.0.0/24", "192.0.0.0", "192.0.0.255", "192.0.1.0"],
  ["192.0.2.0/24", "192.0.2.0", "192.0.2.255", "192.0.3.0"],
  ["192.88.99.0/24", "192.88.99.0", "192.88.99.255", "192.88.100.0"],
  ["192.168.0.0/16", "192.168.0.0", "192.168.255.255", "192.169.0.0"],
  ["198.18.0.0/15", "198.18.0.0", "198.19.255.255", "198.17.255.255"],
  ["198.51.100.0/24", "198.51.100.0", "198.51.100.255", "198.51.101.0"],
  ["203.0.113.0/24", "203.0.113.0", "203.0.113.255", "203.0.114.0"],
  ["224.0.0.0/4", "224.0.0.0", "239.255.255.255", "223.255.255.255"],
  ["240.0.0.0/4", "240.0.0.0", "255.255.255.255", "223.255.255.255"],
  ["::/96", "::", "::ffff:ffff", "2000::"],
  ["::ffff:0:0/96", "::ffff:0.0.0.0", "::ffff:255.255.255.255", "2000::"],
  ["64:ff9b:1::/48", "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b::808:808"],
  ["100::/64", "100::", "100::ffff:ffff:ffff:ffff", "2000::"],
  ["100:0:0:1::/64", "100:0:0:1::", "100::1:ffff:ffff:ffff:ffff", "2000::"],
  ["2001::/23", "2001::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:200::"],
  ["2001::/32 (Teredo)", "2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "2001:200::"],
  ["2001:db8::/32", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"],
  ["2002::/16", "2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2003::"],
  ["3fff::/20", "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::"],
  ["5f00::/16", "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:ffff::"],
  ["fc00::/7", "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:ffff::"],
  ["fe80::/10", "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:ffff::"],
  ["fec0::/10", "fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:ffff::"],
  ["ff00::/8", "ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:ffff::"],
  ["::/3", "::", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2000::"],
  ["4000::/2", "4000::", "7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:ffff:ffff:ffff::"],
  ["8000::/1", "8000::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:ffff:ffff:ffff::"],
];

describe("the webhooks' address guard", () => {
  it("the table covers every refused range", () => {
    const tested = new Set(ranges.map(([range]) => range.split(" ")[0]));
    for (const { network, prefix } of refusedRanges) {
      expect(tested, `${network}/${prefix}`).toContain(`${network}/${prefix}`);
    }
  });

  it.each(ranges)("%s: %s and %s are refused, %s is not", (_range, first, last, global) => {
    expect(isPrivateAddress(first)).toBe(true);
    expect(isPrivateAddress(last)).toBe(true);
    expect(isPrivateAddress(global)).toBe(false);
  });

  it.each([
    // NAT64's well-known prefix: the IPv4 address it carries decides.
    ["64:ff9b::", true],
    ["64:ff9b::7f00:1", true],
    ["64:ff9b::127.0.0.1", true],
    ["64:ff9b::a00:1", true],
    ["64:ff9b::c0a8:101", true],
    ["64:ff9b::a9fe:a9fe", true],
    ["64:ff9b::ffff:ffff", true],
    ["64:ff9b:0:0:0:0:a00:1", true],
    ["64:ff9b::808:808", false],
    ["64:ff9b::8.8.8.8", false],
    ["64:ff9b::100:0", false],
    // IPv4-mapped and IPv4-compatible forms, whatever they carry, as URLs write them too
    // (new URL("https://[::ffff:127.0.0.1]/").hostname is [::ffff:7f00:1]).
    ["::ffff:127.0.0.1", true],
    ["::ffff:7f00:1", true],
    ["::ffff:10.0.0.1", true],
    ["::ffff:8.8.8.8", true],
    ["::ffff:808:808", true],
    ["::127.0.0.1", true],
    ["::8.8.8.8", true],
    ["::1", true],
    // Teredo and 6to4 carry IPv4 addresses too.
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", true],
    ["2002:c0a8:101::1", true],
    ["2002:808:808::1", true],
    ["fe80::1%eth0", true],
    ["fec0::1", true],
    ["169.254.169.254", true],
    ["93.184.215.14", false],
    ["2606:2800:21f:cb07:6820:80da:af6b:8b2c", false],
    ["2a00:1450:4001:82b::200e", false],
    ["not an address", true],
  ])("%s is refused: %s", (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });
});
