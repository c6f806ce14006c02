"""An S3 server for the conformance suite: moto on loopback, with authentication on, plus a
tiny line protocol so that tests running in the conformance venv (whose `kubernetes` client
cannot share a venv with boto3: python-dateutil >= 3 against < 3) can put and read objects.

Run with the moto venv's Python (scripts/pyenv.sh moto; scripts/setup.sh makes it):

    .venv-moto/bin/python tests/conformance/moto_s3.py USER=BUCKET[,BUCKET...] ...

It starts moto on 127.0.0.1 (a free port). The first three requests, unauthenticated, make
an IAM user `admin` with an allow-all policy and its key; every later request must be
signed (a wrong key gets 403 as on AWS). For each USER=BUCKETS it creates the buckets and an
IAM user whose policy allows S3 on those buckets only, so a step that signs with the wrong
Secret is refused. Then it prints one JSON line on stdout:

    {"endpoint": "127.0.0.1:PORT", "users": {"USER": {"accessKey": "...", "secretKey": "..."}}}

and answers one JSON line per JSON request line on stdin, as the admin:

    {"op": "put", "bucket": B, "key": K, "data": BASE64}      -> {"ok": true}
    {"op": "get", "bucket": B, "key": K}                      -> {"ok": true, "data": BASE64}
    {"op": "list", "bucket": B, "prefix": P}                  -> {"ok": true, "keys": [...]}
    {"op": "empty", "bucket": B}                              -> {"ok": true, "deleted": N}

A failed request answers {"ok": false, "error": "<code>: <message>"}. The server stops when
stdin reaches EOF (the test process ends however it ends).
"""

import base64
import json
import os
import socket
import sys

# moto reads this when it is imported: the first three requests need no signature.
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

ALLOW_ALL = {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bucket_policy(buckets):
    arns = [f"arn:aws:s3:::{b}" for b in buckets] + [f"arn:aws:s3:::{b}/*" for b in buckets]
    return {"Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": arns}]}


def make_user(iam, name, policy):
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName="access", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return {"accessKey": key["AccessKeyId"], "secretKey": key["SecretAccessKey"]}


def main(argv):
    grants = {}
    for arg in argv:
        user, _, buckets = arg.partition("=")
        if not user or not buckets or user == "admin":
            sys.exit(f"moto_s3: bad argument {arg!r} (USER=BUCKET[,BUCKET...])")
        grants[user] = buckets.split(",")

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    cfg = Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"})

    def session(key):
        return boto3.session.Session(aws_access_key_id=key["accessKey"],
                                     aws_secret_access_key=key["secretKey"],
                                     region_name="us-east-1")

    # Three unauthenticated requests: the admin user, its policy, its key.
    setup = session({"accessKey": "setup", "secretKey": "setup"}).client(
        "iam", endpoint_url=endpoint, config=cfg)
    admin = make_user(setup, "admin", ALLOW_ALL)
    iam = session(admin).client("iam", endpoint_url=endpoint, config=cfg)
    s3 = session(admin).client("s3", endpoint_url=endpoint, config=cfg)
    users = {}
    for user, buckets in grants.items():
        for b in buckets:
            try:
                s3.create_bucket(Bucket=b)
            except ClientError as e:
                if e.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
                    raise
        users[user] = make_user(iam, user, bucket_policy(buckets))

    print(json.dumps({"endpoint": f"127.0.0.1:{port}", "users": users}), flush=True)

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req["op"]
            if op == "put":
                s3.put_object(Bucket=req["bucket"], Key=req["key"],
                              Body=base64.b64decode(req["data"]))
                out = {"ok": True}
            elif op == "get":
                body = s3.get_object(Bucket=req["bucket"], Key=req["key"])["Body"].read()
                out = {"ok": True, "data": base64.b64encode(body).decode()}
            elif op == "list":
                keys = []
                for page in s3.get_paginator("list_objects_v2").paginate(
                        Bucket=req["bucket"], Prefix=req.get("prefix", "")):
                    keys += [o["Key"] for o in page.get("Contents", [])]
                out = {"ok": True, "keys": keys}
            elif op == "empty":
                n = 0
                for page in s3.get_paginator("list_objects_v2").paginate(Bucket=req["bucket"]):
                    for o in page.get("Contents", []):
                        s3.delete_object(Bucket=req["bucket"], Key=o["Key"])
                        n += 1
                out = {"ok": True, "deleted": n}
            else:
                out = {"ok": False, "error": f"unknown op {op!r}"}
        except ClientError as e:
            err = e.response.get("Error", {})
            out = {"ok": False, "error": f"{err.get('Code')}: {err.get('Message')}"}
        except Exception as e:  # noqa: BLE001 - reported to the caller, who fails the test
            out = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out), flush=True)
    server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
