# Sourced by kubectl.sh (uses its kc, pass, fail, show, $work, $NS, $run_id, $minor, $tag):
# objects that are neither pods nor Secrets, as kubectl writes them. Client-side `apply`
# twice (a create carrying kubectl.kubernetes.io/last-applied-configuration, then a PATCH:
# strategic merge for built-in kinds, JSON merge for custom resources), `apply
# --server-side`, `patch --type strategic|merge|json`, a Service and a Deployment whose
# lists merge by key, a Job stored without a controller, and a CRD round trip (`wait --for
# condition=established`, a custom resource, its status through `--subresource=status`,
# delete). Every object is named after the run.

obj_cm="kc$minor-cm-$run_id"
obj_ssa="kc$minor-ssa-$run_id"
obj_svc="kc$minor-svc-$run_id"
obj_job="kc$minor-job-$run_id"
obj_dep="kc$minor-dep-$run_id"
crd_group="r$run_id.kc$minor.conformance.argoexec.io"
crd_name="widgets.$crd_group"
obj_cr="kc$minor-w-$run_id"

# step NAME OUTFILE CHECK-COMMAND... : PASS when kubectl succeeded ($rc) and the check holds.
step() {
  local name=$1 base=$2; shift 2
  if [ "$rc" = 0 ] && "$@"; then pass "$name"; else
    fail "$name (exit $rc)" "$(show "$base.out")" "$(show "$base.err")"; fi
}
# requests PATH: how many PATCH requests the node counted on PATH (admin debug endpoint).
patches_on() {
  "$KUBECTL" get --raw /argoexec/v1/requests 2>/dev/null | python3 -c '
import json, sys
rows = json.load(sys.stdin)["requests"]
print(sum(r["count"] for r in rows if r.get("verb") == "patch" and r.get("path") == sys.argv[1]))' "$1"
}
jp() { "$KUBECTL" get "$@" 2>/dev/null; }
applied_annotation() { jp "$@" -o "jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}"; }

# ---- ConfigMap: apply, apply again with a change (a PATCH), last-applied annotation
cat >"$work/cm1.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: $obj_cm, namespace: $NS}
data: {a: "1", b: "2"}
EOF
cat >"$work/cm2.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: $obj_cm, namespace: $NS}
data: {a: "9", c: "3"}
EOF
kc "$work/ca1.out" "$work/ca1.err" apply -f "$work/cm1.yaml"; rc=$?
step "apply -f ConfigMap (create)" "$work/ca1" grep -qx "configmap/$obj_cm created" "$work/ca1.out"
ann=$(applied_annotation configmap "$obj_cm" -n "$NS")
rc=0; step "apply: last-applied-configuration on create" "$work/ca1" grep -q '"a":"1","b":"2"' <<<"$ann"
kc "$work/ca2.out" "$work/ca2.err" apply -f "$work/cm2.yaml"; rc=$?
step "apply -f ConfigMap again (configured)" "$work/ca2" grep -qx "configmap/$obj_cm configured" "$work/ca2.out"
data=$(jp configmap "$obj_cm" -n "$NS" -o 'jsonpath={.data.a},{.data.b},{.data.c}')
n=$(patches_on "/api/v1/namespaces/$NS/configmaps/$obj_cm")
ann=$(applied_annotation configmap "$obj_cm" -n "$NS")
rc=0; step "second apply is one PATCH: a=9, b removed, c added ($data; $n patch)" "$work/ca2" \
  test "$data|$n|$(grep -c '"a":"9","c":"3"' <<<"$ann")" = "9,,3|1|1"

# ---- kubectl patch, each type
kc "$work/ps.out" "$work/ps.err" patch configmap "$obj_cm" -n "$NS" --type strategic -p '{"data":{"s":"1"}}'; rc=$?
step "patch --type strategic" "$work/ps" grep -q "patched" "$work/ps.out"
kc "$work/pm.out" "$work/pm.err" patch configmap "$obj_cm" -n "$NS" --type merge -p '{"data":{"m":"1","c":null}}'; rc=$?
step "patch --type merge" "$work/pm" grep -q "patched" "$work/pm.out"
kc "$work/pj.out" "$work/pj.err" patch configmap "$obj_cm" -n "$NS" --type json -p '[{"op":"add","path":"/data/j","value":"1"},{"op":"remove","path":"/data/a"}]'; rc=$?
step "patch --type json" "$work/pj" grep -q "patched" "$work/pj.out"
data=$(jp configmap "$obj_cm" -n "$NS" -o 'jsonpath={.data}')
rc=0; step "get -o jsonpath after the three patches: $data" "$work/pj" \
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(d != {"s":"1","m":"1","j":"1"})' "$data"

# ---- server-side apply
cat >"$work/ssa.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: $obj_ssa, namespace: $NS}
data: {x: "1", y: "2"}
EOF
kc "$work/sa1.out" "$work/sa1.err" apply --server-side -f "$work/ssa.yaml"; rc=$?
step "apply --server-side (create)" "$work/sa1" grep -q "configmap/$obj_ssa serverside-applied" "$work/sa1.out"
sed -i 's/{x: "1", y: "2"}/{x: "5"}/' "$work/ssa.yaml"
kc "$work/sa2.out" "$work/sa2.err" apply --server-side -f "$work/ssa.yaml"; rc=$?
got=$(jp configmap "$obj_ssa" -n "$NS" -o 'jsonpath={.data.x},{.data.y},{.metadata.managedFields[0].manager}')
step "apply --server-side again drops y: $got" "$work/sa2" test "$got" = "5,,kubectl"

# ---- Service: ports merge by port; a removed port is deleted by the apply
cat >"$work/svc.yaml" <<EOF
apiVersion: v1
kind: Service
metadata: {name: $obj_svc, namespace: $NS}
spec:
  selector: {app: x}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: https, port: 443, targetPort: 8443}
EOF
kc "$work/sv1.out" "$work/sv1.err" apply -f "$work/svc.yaml"; rc=$?
step "apply -f Service" "$work/sv1" grep -qx "service/$obj_svc created" "$work/sv1.out"
sed -i 's/targetPort: 8080/targetPort: 9090/; /name: https/d' "$work/svc.yaml"
kc "$work/sv2.out" "$work/sv2.err" apply -f "$work/svc.yaml"; rc=$?
got=$(jp service "$obj_svc" -n "$NS" -o 'jsonpath={range .spec.ports[*]}{.port}:{.targetPort} {end}')
step "apply Service again (strategic: 443 deleted, 80 changed): $got" "$work/sv2" test "$got" = "80:9090 "

# ---- Deployment: env merges by name through a strategic patch
cat >"$work/dep.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $obj_dep, namespace: $NS}
spec:
  selector: {matchLabels: {app: $obj_dep}}
  template:
    metadata: {labels: {app: $obj_dep}}
    spec:
      containers:
      - name: main
        image: busybox:latest
        env: [{name: A, value: "1"}]
EOF
kc "$work/dp1.out" "$work/dp1.err" apply -f "$work/dep.yaml"; rc=$?
step "apply -f Deployment (stored, no controller)" "$work/dp1" grep -qx "deployment.apps/$obj_dep created" "$work/dp1.out"
kc "$work/dp2.out" "$work/dp2.err" patch deployment "$obj_dep" -n "$NS" --type strategic \
  -p '{"spec":{"template":{"spec":{"containers":[{"name":"main","env":[{"name":"B","value":"2"}]}]}}}}'; rc=$?
got=$(jp deployment "$obj_dep" -n "$NS" -o 'jsonpath={range .spec.template.spec.containers[0].env[*]}{.name}={.value} {end}{.metadata.generation}')
step "strategic patch of a Deployment merges env by name: $got" "$work/dp2" test "$got" = "A=1 B=2 2"

# ---- Job: stored as sent (no Job controller runs here)
cat >"$work/job.yaml" <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $obj_job, namespace: $NS}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox:latest, command: ["true"]}]
EOF
kc "$work/jb.out" "$work/jb.err" apply -f "$work/job.yaml"; rc=$?
got=$(jp job "$obj_job" -n "$NS" -o 'jsonpath={.spec.template.spec.containers[0].image}')
step "apply -f Job, get -o jsonpath: $got" "$work/jb" test "$got" = "busybox:latest"

# ---- CRD round trip
cat >"$work/crd.yaml" <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $crd_name}
spec:
  group: $crd_group
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
cat >"$work/cr.yaml" <<EOF
apiVersion: $crd_group/v1
kind: Widget
metadata: {name: $obj_cr, namespace: $NS}
spec: {size: 1}
EOF
kc "$work/cd.out" "$work/cd.err" apply -f "$work/crd.yaml"; rc=$?
step "apply -f CustomResourceDefinition" "$work/cd" grep -qx "customresourcedefinition.apiextensions.k8s.io/$crd_name created" "$work/cd.out"
kc "$work/cw.out" "$work/cw.err" wait --for condition=established --timeout=30s "crd/$crd_name"; rc=$?
step "wait --for condition=established" "$work/cw" grep -q "condition met" "$work/cw.out"
kc "$work/cr.out" "$work/cr.err" apply -f "$work/cr.yaml"; rc=$?
step "apply -f a custom resource" "$work/cr" grep -qx "widget.$crd_group/$obj_cr created" "$work/cr.out"
sed -i 's/size: 1/size: 2/' "$work/cr.yaml"
kc "$work/cr2.out" "$work/cr2.err" apply -f "$work/cr.yaml"; rc=$?
got=$(jp "widgets.$crd_group" -n "$NS" -o 'jsonpath={.items[0].metadata.name} {.items[0].spec.size} {.items[0].metadata.generation}')
step "apply the custom resource again (merge patch), get -o jsonpath: $got" "$work/cr2" test "$got" = "$obj_cr 2 2"
kc "$work/cs.out" "$work/cs.err" patch "widgets.$crd_group" "$obj_cr" -n "$NS" --subresource=status --type merge -p '{"status":{"phase":"Done"},"spec":{"size":7}}'; rc=$?
got=$(jp "widgets.$crd_group" "$obj_cr" -n "$NS" -o 'jsonpath={.status.phase} {.spec.size} {.metadata.generation}')
step "patch --subresource=status changes only the status: $got" "$work/cs" test "$got" = "Done 2 2"
kc "$work/cx.out" "$work/cx.err" delete "widgets.$crd_group" "$obj_cr" -n "$NS"; rc=$?
step "delete the custom resource" "$work/cx" grep -q "deleted" "$work/cx.out"
kc "$work/cy.out" "$work/cy.err" delete crd "$crd_name"; rc=$?
step "delete the CRD" "$work/cy" grep -q "deleted" "$work/cy.out"

timeout 60 "$KUBECTL" delete -n "$NS" configmap "$obj_cm" "$obj_ssa" >/dev/null 2>&1
timeout 60 "$KUBECTL" delete -n "$NS" service "$obj_svc" >/dev/null 2>&1
timeout 60 "$KUBECTL" delete -n "$NS" deployment "$obj_dep" >/dev/null 2>&1
timeout 60 "$KUBECTL" delete -n "$NS" job "$obj_job" >/dev/null 2>&1
