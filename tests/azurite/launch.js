// Start Azurite's blob service on 127.0.0.1:PORT in memory, create the containers named on
// the command line, print "READY", and stop everything when stdin closes (the test process
// ended). Usage: node launch.js PORT CONTAINER...
"use strict";
const { spawn } = require("child_process");
const path = require("path");
const { BlobServiceClient, StorageSharedKeyCredential } = require("@azure/storage-blob");

const [port, ...containers] = process.argv.slice(2);
const account = "devstoreaccount1";
// Azurite's well-known development key (public, documented by Microsoft).
const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const bin = path.join(__dirname, "node_modules", ".bin", "azurite-blob");
const child = spawn(bin, ["--blobHost", "127.0.0.1", "--blobPort", port, "--inMemoryPersistence", "--skipApiVersionCheck", "--silent"], {
  stdio: ["ignore", "pipe", "inherit"],
});
const stop = () => { child.kill("SIGKILL"); process.exit(0); };
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();
child.on("exit", (code) => { console.error(`azurite exited (${code})`); process.exit(1); });
let seen = "";
child.stdout.on("data", async (d) => {
  seen += d.toString();
  if (!seen.includes("successfully listens")) return;
  seen = "";
  const svc = new BlobServiceClient(`http://127.0.0.1:${port}/${account}`, new StorageSharedKeyCredential(account, key));
  try {
    for (const c of containers) await svc.getContainerClient(c).create();
    console.log("READY");
  } catch (e) {
    console.error(`creating containers: ${e.message}`);
    stop();
  }
});
