#!/usr/bin/env bash
# Drive placement-numa with the real OpenStack client (osc-placement), as a new user would.
PORT=${PORT:-8781}
OPENSTACK=${OPENSTACK:-openstack}
O="$OPENSTACK --os-auth-type admin_token --os-token admin --os-endpoint http://127.0.0.1:$PORT --os-placement-api-version ${V:-1.39}"
ok=0; bad=0
run() { out=$($O "$@" 2>&1); rc=$?; if [ $rc -eq 0 ]; then ok=$((ok+1)); echo "OK   openstack $*"; else bad=$((bad+1)); echo "FAIL openstack $* :: $(echo "$out" | tail -2 | tr '\n' ' ')"; fi; }
CN=$($O resource provider create osc-cn -f value -c uuid)
NUMA=$($O resource provider create osc-cn_NUMA0 --parent-provider $CN -f value -c uuid)
run resource provider list
run resource provider show $CN
run resource provider set $NUMA --name osc-cn_NUMA0 --parent-provider $CN
run resource provider inventory set $CN --resource DISK_GB=100 --resource VCPU=8
run resource provider inventory set $NUMA --resource PCPU=4 --resource MEMORY_MB=4096
run resource provider inventory class set $CN VCPU --total 16 --allocation_ratio 4
run resource provider inventory list $CN
run resource provider inventory show $CN VCPU
run trait create CUSTOM_OSC_TRAIT
run trait list --name startswith:CUSTOM_
run trait show CUSTOM_OSC_TRAIT
run resource provider trait set $NUMA --trait HW_NUMA_ROOT --trait CUSTOM_OSC_TRAIT
run resource provider trait list $NUMA
run resource provider aggregate set $CN --aggregate 11111111-2222-3333-4444-555555555555 --generation $($O resource provider show $CN -f value -c generation)
run resource provider aggregate list $CN
run resource class create CUSTOM_OSC_CLASS
run resource class list
run resource class show CUSTOM_OSC_CLASS
run resource class delete CUSTOM_OSC_CLASS
C1=$(python3 -c 'import uuid;print(uuid.uuid4())')
run resource provider allocation set $C1 --allocation rp=$CN,DISK_GB=10 --allocation rp=$NUMA,PCPU=2,MEMORY_MB=1024 --project-id p1 --user-id u1 --consumer-type INSTANCE
run resource provider allocation show $C1
run resource provider usage show $NUMA
run resource usage show p1
run allocation candidate list --resource PCPU=1 --resource DISK_GB=5
run allocation candidate list --group 1 --resource PCPU=1 --required HW_NUMA_ROOT --group-policy isolate
run resource provider allocation unset $C1 --provider $NUMA
run resource provider allocation delete $C1
run resource provider trait delete $NUMA
run resource provider inventory delete $CN --resource-class DISK_GB
run resource provider inventory delete $NUMA
run trait delete CUSTOM_OSC_TRAIT
run resource provider delete $NUMA
run resource provider delete $CN
echo "osc-placement: $ok passed, $bad failed"
