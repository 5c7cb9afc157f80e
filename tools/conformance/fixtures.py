"""gabbi fixtures for Placement's API tests, re-implemented over HTTP against placement-numa.

Each class builds, through the public API, the provider trees upstream's fixtures of the same
name describe (names, inventories, traits, aggregates, allocations) and exports the environment
variables the YAML files refer to.
"""

import os
import uuid

import httpx
from gabbi import fixture

BASE = os.environ.get("CONF_BASE_URL", "http://127.0.0.1:8799")
H = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}


def gen():
    return str(uuid.uuid4())


class APIFixture(fixture.GabbiFixture):
    def start_fixture(self):
        for k in [
            "RP_UUID",
            "RP_NAME",
            "RP_UUID1",
            "RP_NAME1",
            "RP_UUID2",
            "RP_NAME2",
            "PROJECT_ID",
            "ADMIN_PROJECT_ID",
            "SERVICE_PROJECT_ID",
            "USER_ID",
            "PROJECT_ID_ALT",
            "USER_ID_ALT",
            "INSTANCE_UUID",
            "MIGRATION_UUID",
            "CONSUMER_UUID",
            "PARENT_PROVIDER_UUID",
            "ALT_PARENT_PROVIDER_UUID",
        ]:
            os.environ[k] = gen()
        os.environ["CUSTOM_RES_CLASS"] = "CUSTOM_IRON_NFV"
        os.environ["CUSTOM_RES_CLASS1"] = "CUSTOM_IRON_NFV1"
        os.environ["CUSTOM_RES_CLASS2"] = "CUSTOM_IRON_NFV2"

    def stop_fixture(self):
        pass


def _c():
    return httpx.Client(base_url=BASE, headers=H, timeout=30)


def create_provider(c, name, *aggs, parent=None, uuid_=None):
    body = {"name": name, "uuid": uuid_ or gen()}
    if parent:
        body["parent_provider_uuid"] = parent
    r = c.post("/resource_providers", json=body)
    r.raise_for_status()
    rp = r.json()
    if aggs:
        r = c.put(
            f"/resource_providers/{rp['uuid']}/aggregates",
            json={"aggregates": list(aggs), "resource_provider_generation": rp["generation"]},
        )
        r.raise_for_status()
    return rp["uuid"]


def add_inventory(c, rp, rc, total, **kw):
    inv = c.get(f"/resource_providers/{rp}/inventories").json()
    invs = inv["inventories"]
    invs[rc] = {"total": total, **kw}
    if rc.startswith("CUSTOM_"):
        c.put(f"/resource_classes/{rc}")
    r = c.put(
        f"/resource_providers/{rp}/inventories",
        json={
            "inventories": invs,
            "resource_provider_generation": inv["resource_provider_generation"],
        },
    )
    r.raise_for_status()


def set_traits(c, rp, *traits):
    g = c.get(f"/resource_providers/{rp}").json()["generation"]
    for t in traits:
        if t.startswith("CUSTOM_"):
            c.put(f"/traits/{t}")
    r = c.put(
        f"/resource_providers/{rp}/traits",
        json={"traits": list(traits), "resource_provider_generation": g},
    )
    r.raise_for_status()


def set_allocation(c, consumer, project, user, allocs):
    """allocs: {rp_uuid: {rc: amount}} (adds to existing allocations of consumer)."""
    cur = c.get(f"/allocations/{consumer}").json()
    merged = {k: {"resources": dict(v["resources"])} for k, v in cur.get("allocations", {}).items()}
    for rp, res in allocs.items():
        merged.setdefault(rp, {"resources": {}})["resources"].update(res)
    # Like upstream's fixtures, no consumer type (it reads back as "unknown").
    body = {
        "allocations": merged,
        "project_id": project,
        "user_id": user,
        "consumer_generation": cur.get("consumer_generation"),
    }
    r = c.put(
        f"/allocations/{consumer}", json=body, headers={"openstack-api-version": "placement 1.37"}
    )
    if r.status_code >= 400:
        raise RuntimeError(r.text)


class AllocationFixture(APIFixture):
    def start_fixture(self):
        super().start_fixture()
        os.environ["ALT_USER_ID"] = gen()
        p, u, alt = os.environ["PROJECT_ID"], os.environ["USER_ID"], os.environ["ALT_USER_ID"]
        with _c() as c:
            rp = create_provider(c, os.environ["RP_NAME"], uuid_=os.environ["RP_UUID"])
            add_inventory(c, rp, "DISK_GB", 2048, step_size=10, min_unit=10, max_unit=1000)
            add_inventory(c, rp, "VCPU", 10, max_unit=10)
            c1 = gen()
            set_allocation(c, c1, p, u, {rp: {"DISK_GB": 1000}})
            os.environ["CONSUMER_0"] = c1
            c2 = gen()
            set_allocation(c, c2, p, u, {rp: {"VCPU": 6}})
            os.environ["CONSUMER_ID"] = c2
            c3 = gen()
            set_allocation(c, c3, p, alt, {rp: {"DISK_GB": 20, "VCPU": 1}})
            os.environ["ALT_CONSUMER_ID"] = c3
        os.environ["ALT_RP_UUID"] = gen()
        os.environ["ALT_RP_NAME"] = gen()


class _Tree:
    """Helpers mirroring upstream's test_base, over HTTP."""

    def __init__(self, c):
        self.c = c

    def provider(self, name, *aggs, parent=None):
        return create_provider(self.c, name, *aggs, parent=parent)

    def inv(self, rp, rc, total, **kw):
        kw.setdefault("max_unit", total)
        add_inventory(self.c, rp, rc, total, **kw)

    def traits(self, rp, *traits):
        set_traits(self.c, rp, *traits)

    def alloc(self, rp, consumer, project, user, res):
        set_allocation(self.c, consumer, project, user, {rp: res})


class SharedStorageFixture(APIFixture):
    def start_fixture(self):
        super().start_fixture()
        agg = gen()
        with _c() as c:
            t = _Tree(c)
            cn1 = t.provider("cn1", agg)
            cn2 = t.provider("cn2", agg)
            ss = t.provider("ss", agg)
            ss2 = t.provider("ss2", agg)
            n11 = t.provider("numa1_1", parent=cn1)
            n12 = t.provider("numa1_2", parent=cn1)
            n21 = t.provider("numa2_1", parent=cn2)
            n22 = t.provider("numa2_2", parent=cn2)
            pfs = {
                "PF1_1": t.provider("pf1_1", parent=n11),
                "PF1_2": t.provider("pf1_2", parent=n12),
                "PF2_1": t.provider("pf2_1", parent=n21),
                "PF2_2": t.provider("pf2_2", parent=n22),
            }
            env = dict(
                AGG_UUID=agg,
                CN1_UUID=cn1,
                CN2_UUID=cn2,
                SS_UUID=ss,
                SS2_UUID=ss2,
                NUMA1_1_UUID=n11,
                NUMA1_2_UUID=n12,
                NUMA2_1_UUID=n21,
                NUMA2_2_UUID=n22,
            )
            env.update({k + "_UUID": v for k, v in pfs.items()})
            os.environ.update(env)
            for cn in (cn1, cn2):
                t.inv(cn, "VCPU", 24, allocation_ratio=16.0)
                t.inv(cn, "MEMORY_MB", 128 * 1024, allocation_ratio=1.5)
            t.traits(cn1, "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
            t.inv(cn2, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            for s in (ss, ss2):
                t.inv(s, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
                t.traits(s, "MISC_SHARES_VIA_AGGREGATE")
            for pf in pfs.values():
                t.inv(pf, "SRIOV_NET_VF", 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    def start_fixture(self):
        super().start_fixture()
        a, b, cc = gen(), gen(), gen()
        with _c() as c:
            t = _Tree(c)
            cn1 = t.provider("cn1", a)
            cn2 = t.provider("cn2", a, b)
            ss1 = t.provider("ss1", a)
            ss2 = t.provider("ss2", cc)
            n11 = t.provider("numa1_1", cc, parent=cn1)
            n12 = t.provider("numa1_2", parent=cn1)
            n21 = t.provider("numa2_1", parent=cn2)
            n22 = t.provider("numa2_2", parent=cn2)
            os.environ.update(
                dict(
                    AGGA_UUID=a,
                    AGGB_UUID=b,
                    AGGC_UUID=cc,
                    CN1_UUID=cn1,
                    CN2_UUID=cn2,
                    SS1_UUID=ss1,
                    SS2_UUID=ss2,
                    NUMA1_1_UUID=n11,
                    NUMA1_2_UUID=n12,
                    NUMA2_1_UUID=n21,
                    NUMA2_2_UUID=n22,
                )
            )
            for n in (n11, n12, n21, n22):
                t.inv(n, "VCPU", 24, allocation_ratio=16.0)
            for s in (ss1, ss2):
                t.inv(s, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
                t.traits(s, "MISC_SHARES_VIA_AGGREGATE")


class NUMANetworkFixture(APIFixture):
    deep = False

    def start_fixture(self):
        super().start_fixture()
        a = gen()
        os.environ["AGGA_UUID"] = a
        with _c() as c:
            t = _Tree(c)
            cn1_parent = cn2_parent = None
            if self.deep:
                gp = t.provider("gp1")
                p1 = t.provider("p1", parent=gp)
                p2 = t.provider("p2", parent=gp)
                cn1_parent, cn2_parent = p1, p2
            ss1 = t.provider("ss1", a)
            t.traits(ss1, "MISC_SHARES_VIA_AGGREGATE")
            t.inv(ss1, "DISK_GB", 2000)
            os.environ["SS1_UUID"] = ss1
            cn1 = t.provider("cn1", a, parent=cn1_parent)
            t.traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
            os.environ["CN1_UUID"] = cn1
            numas = []
            for i in (0, 1):
                n = t.provider(f"numa{i}", parent=cn1)
                t.traits(n, *(["HW_NUMA_ROOT"] + (["CUSTOM_FOO"] if i == 1 else [])))
                t.inv(n, "VCPU", 4)
                numas.append(n)
                os.environ[f"NUMA{i}_UUID"] = n
            t.inv(numas[0], "MEMORY_MB", 2048, min_unit=512, step_size=256)
            t.inv(numas[1], "MEMORY_MB", 2048, min_unit=256, max_unit=1024)
            proj, user = "numafx-project", "numafx-user"
            t.alloc(numas[0], gen(), proj, user, {"VCPU": 2})
            f = t.provider("fpga0", parent=numas[0])
            t.inv(f, "FPGA", 1)
            os.environ["FPGA0_UUID"] = f
            g = t.provider("pgpu0", parent=numas[0])
            t.inv(g, "VGPU", 8)
            os.environ["PGPU0_UUID"] = g
            for i in (0, 1):
                f = t.provider(f"fpga1_{i}", parent=numas[1])
                t.inv(f, "FPGA", 1)
                os.environ[f"FPGA1_{i}_UUID"] = f
            ag = t.provider("sriov_agent", parent=cn1)
            t.traits(ag, "CUSTOM_VNIC_TYPE_DIRECT")
            os.environ["SRIOV_AGENT_UUID"] = ag
            for i in (1, 2):
                d = t.provider(f"esn{i}", parent=ag)
                t.traits(d, f"CUSTOM_PHYSNET{i}")
                t.inv(d, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * i)
                os.environ[f"ESN{i}_UUID"] = d
            ag = t.provider("ovs_agent", parent=cn1)
            t.traits(ag, "CUSTOM_VNIC_TYPE_NORMAL")
            os.environ["OVS_AGENT_UUID"] = ag
            d = t.provider("br_int", parent=ag)
            t.traits(d, "CUSTOM_PHYSNET0")
            t.inv(d, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
            os.environ["BR_INT_UUID"] = d
            cn2 = t.provider("cn2", a, parent=cn2_parent)
            t.inv(cn2, "VCPU", 8)
            t.alloc(cn2, gen(), proj, user, {"VCPU": 3})
            t.inv(cn2, "MEMORY_MB", 2048, min_unit=1024, step_size=128)
            t.inv(cn2, "DISK_GB", 1000)
            t.traits(cn2, "CUSTOM_FOO")
            os.environ["CN2_UUID"] = cn2
            nics = []
            for i in (1, 2, 3):
                n = t.provider(f"nic{i}", parent=cn2)
                t.traits(n, "CUSTOM_HW_NIC_ROOT")
                nics.append(n)
                os.environ[f"NIC{i}_UUID"] = n
            for i in (1, 2):
                pf = t.provider(f"pf1_{i}", parent=nics[0])
                t.traits(pf, f"CUSTOM_PHYSNET{i}")
                t.inv(pf, "CUSTOM_VF", 4)
                os.environ[f"PF1_{i}_UUID"] = pf
            for i in (0, 1, 2, 3):
                pf = t.provider(f"pf2_{i + 1}", parent=nics[1])
                t.traits(pf, f"CUSTOM_PHYSNET{(i % 2) + 1}")
                t.inv(pf, "CUSTOM_VF", 2)
                os.environ[f"PF2_{i + 1}_UUID"] = pf
            pf = t.provider("pf3_1", parent=nics[2])
            t.traits(pf, "CUSTOM_PHYSNET1")
            t.inv(pf, "CUSTOM_VF", 8)
            os.environ["PF3_1_UUID"] = pf


class DeepNUMANetworkFixture(NUMANetworkFixture):
    deep = True


class NonSharedStorageFixture(APIFixture):
    def start_fixture(self):
        super().start_fixture()
        for k in ("AGGA_UUID", "AGGB_UUID", "AGGC_UUID"):
            os.environ[k] = gen()
        with _c() as c:
            t = _Tree(c)
            for i in (1, 2, 3):
                cn = t.provider(f"cn{i}")
                os.environ[f"CN{i}_UUID"] = cn
                t.inv(cn, "VCPU", 24)
                t.inv(cn, "MEMORY_MB", 128 * 1024)
                t.inv(cn, "DISK_GB", 2000)


class GranularFixture(APIFixture):
    def start_fixture(self):
        super().start_fixture()
        a, b, cc = gen(), gen(), gen()
        os.environ.update(AGGA=a, AGGB=b, AGGC=cc)
        with _c() as c:
            t = _Tree(c)
            c.put("/resource_classes/CUSTOM_NET_MBPS")
            left = t.provider("cn_left", a)
            os.environ["CN_LEFT"] = left
            for rc, n in (
                ("VCPU", 8),
                ("MEMORY_MB", 4096),
                ("DISK_GB", 500),
                ("VGPU", 8),
                ("SRIOV_NET_VF", 8),
                ("CUSTOM_NET_MBPS", 4000),
            ):
                t.inv(left, rc, n)
            t.traits(
                left,
                "HW_CPU_X86_AVX",
                "HW_CPU_X86_AVX2",
                "HW_GPU_API_DXVA",
                "HW_NIC_DCB_PFC",
                "CUSTOM_FOO",
            )
            m = t.provider("cn_middle", a, b)
            os.environ["CN_MIDDLE"] = m
            for rc, n in (
                ("VCPU", 8),
                ("MEMORY_MB", 4096),
                ("SRIOV_NET_VF", 8),
                ("CUSTOM_NET_MBPS", 4000),
            ):
                t.inv(m, rc, n)
            t.traits(m, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS")
            r = t.provider("cn_right", b, cc)
            os.environ["CN_RIGHT"] = r
            for rc, n in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)):
                t.inv(r, rc, n)
            t.inv(r, "VGPU", 8, max_unit=2)
            t.traits(r, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")
            s1 = t.provider("shr_disk_1", a)
            os.environ["SHR_DISK_1"] = s1
            t.inv(s1, "DISK_GB", 1000)
            t.traits(s1, "MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD")
            s2 = t.provider("shr_disk_2", a, b)
            os.environ["SHR_DISK_2"] = s2
            t.inv(s2, "DISK_GB", 1000)
            t.traits(s2, "MISC_SHARES_VIA_AGGREGATE")
            sn = t.provider("shr_net", cc)
            os.environ["SHR_NET"] = sn
            t.inv(sn, "SRIOV_NET_VF", 16)
            t.inv(sn, "CUSTOM_NET_MBPS", 40000)
            t.traits(sn, "MISC_SHARES_VIA_AGGREGATE")


class NeutronQoSMultiSegmentFixture(APIFixture):
    # compute: ([(bridge suffix, physnet, bw)], [(pf suffix, physnet, bw)])
    SPEC = {
        "compute0": ([("br-ex", "br_ex", "OTHER", 5000)], [("enp129s0f0", "pf0", "OTHER", 10000)]),
        "compute1": (
            [("br-ex", "br_ex", "MSN_S1", 5000)],
            [("enp129s0f0", "pf0", "MSN_S1", 10000)],
        ),
        "compute2": (
            [("br-ex", "br_ex", "MSN_S2", 5000)],
            [("enp129s0f0", "pf0", "MSN_S2", 10000)],
        ),
        "compute3": (
            [("br-ex", "br_ex", "MSN_S1", 1000), ("br-ex2", "br_ex2", "MSN_S2", 1000)],
            [("enp129s0f0", "pf0", "MSN_S1", 1000), ("enp129s0f1", "pf1", "MSN_S2", 1000)],
        ),
    }
    SRIOV = (
        "CUSTOM_VNIC_TYPE_DIRECT",
        "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
        "CUSTOM_VNIC_TYPE_MACVTAP",
    )

    def start_fixture(self):
        super().start_fixture()
        with _c() as c:
            t = _Tree(c)
            sriov_uuids = {}
            for cn_name, (bridges, pfs) in self.SPEC.items():
                cn = t.provider(cn_name)
                os.environ[cn_name] = cn
                t.inv(cn, "VCPU", 8)
                t.inv(cn, "MEMORY_MB", 4096)
                t.inv(cn, "DISK_GB", 500)
                ovs = t.provider(f"{cn_name}:Open vSwitch agent", parent=cn)
                os.environ[f"{cn_name}:ovs_agent"] = ovs
                t.inv(ovs, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
                t.traits(ovs, "CUSTOM_VNIC_TYPE_NORMAL")
                for dev, env, physnet, bw in bridges:
                    br = t.provider(f"{cn_name}:Open vSwitch agent:{dev}", parent=ovs)
                    os.environ[f"{cn_name}:{env}"] = br
                    t.inv(br, "NET_BW_EGR_KILOBIT_PER_SEC", bw)
                    t.inv(br, "NET_BW_IGR_KILOBIT_PER_SEC", bw)
                    t.traits(br, "CUSTOM_VNIC_TYPE_NORMAL", f"CUSTOM_PHYSNET_{physnet}")
                ag = t.provider(f"{cn_name}:NIC Switch agent", parent=cn)
                sriov_uuids[cn_name] = ag
                # upstream's fixture exports compute2's agent under compute3's name
                os.environ[f"{cn_name}:sriov_agent"] = (
                    sriov_uuids["compute2"] if cn_name == "compute3" else ag
                )
                t.traits(ag, *self.SRIOV)
                for dev, env, physnet, bw in pfs:
                    pf = t.provider(f"{cn_name}:NIC Switch agent:{dev}", parent=ag)
                    os.environ[f"{cn_name}:{env}"] = pf
                    t.inv(pf, "NET_BW_EGR_KILOBIT_PER_SEC", bw)
                    t.inv(pf, "NET_BW_IGR_KILOBIT_PER_SEC", bw)
                    t.traits(pf, *self.SRIOV, f"CUSTOM_PHYSNET_{physnet}")


# Policy, RBAC and CORS fixtures: the server's configuration for them (an open policy file,
# legacy or new policy defaults, [cors]) is written by run.py before the server starts
# (``server_conf``); the fixtures only export the environment, as APIFixture does.


class OpenPolicyFixture(APIFixture):
    pass


class SecureRBACPolicyFixture(APIFixture):
    pass


class LegacyRBACPolicyFixture(APIFixture):
    pass


class CORSFixture(APIFixture):
    pass
