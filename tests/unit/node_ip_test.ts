import assert from "node:assert/strict";
import { chooseNodeIP } from "../../lib/agent/node_ip.ts";

function iface(address: string, family: "IPv4" | "IPv6" = "IPv4"): Deno.NetworkInterfaceInfo {
  return {
    family,
    name: "eth0",
    address,
    netmask: "",
    scopeid: null,
    cidr: `${address}/24`,
    mac: "",
  };
}

Deno.test("chooseNodeIP() takes --node-ip when given", () => {
  assert.equal(chooseNodeIP("10.1.2.3", [iface("192.168.0.5")]), "10.1.2.3");
});

Deno.test("chooseNodeIP() prefers a non-loopback IPv4, then a global IPv6", () => {
  assert.equal(
    chooseNodeIP("", [iface("127.0.0.1"), iface("fe80::1", "IPv6"), iface("192.168.0.5")]),
    "192.168.0.5",
  );
  assert.equal(chooseNodeIP("", [iface("127.0.0.1"), iface("2001:db8::5", "IPv6")]), "2001:db8::5");
  assert.equal(chooseNodeIP("", [iface("127.0.0.1"), iface("::1", "IPv6")]), "");
});
