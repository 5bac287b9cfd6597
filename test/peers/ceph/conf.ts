/**
 * ceph.conf of the peer tests' one-node cluster. Each setting is here for a
 * reason found the hard way (see the comments); none is a tuning guess.
 */
export function cephConf(c: {
  dir: string;
  fsid: string;
  monV2: number;
  monV1: number;
  rgwPort: number;
  /** Exactly 16 characters: the AES-128 key radosgw encrypts session tokens with. */
  stsKey: string;
}): string {
  if (c.stsKey.length !== 16) throw new Error('rgw sts key must be exactly 16 characters');
  return `[global]
fsid = ${c.fsid}
mon host = [v2:127.0.0.1:${c.monV2},v1:127.0.0.1:${c.monV1}]
mon initial members = a
public network = 127.0.0.0/8
public addr = 127.0.0.1
# No cephx: nothing here is reachable from outside the machine.
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
mon warn on insecure global id reclaim = false
mon warn on insecure global id reclaim allowed = false
# One OSD, no replication.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
# Full disks in CI must neither warn nor stop the monitor.
mon data avail warn = 2
mon data avail crit = 1
# Pool creation commits in a tenth of a second instead of one.
paxos propose interval = 0.1
paxos min wait = 0.01
run dir = ${c.dir}/run
admin socket = ${c.dir}/run/$name.asok
log file = ${c.dir}/log/$name.log
keyring = /dev/null

[mon]
mon data = ${c.dir}/mon.$id

[osd]
osd data = ${c.dir}/osd.$id
osd crush initial weight = 1
# Objects live in RAM; this is the capacity (writes fail near 95 % full).
osd objectstore = memstore
memstore device bytes = 1610612736

[client]
# radosgw (unlike the other clients) insists on a secure mon connection,
# which auth = none cannot give: allow crc.
ms mon client mode = crc secure
rgw sts key = ${c.stsKey}
rgw s3 auth use sts = true

[client.rgw.gw]
rgw frontends = beast endpoint=127.0.0.1:${c.rgwPort}
`;
}
