//! How a ZooKeeper ensemble's members start: each with a client, a quorum
//! and an election port, its `zoo.cfg` naming the others by their links
//! (so a partition cuts what they say to each other), on the JVM and the
//! classpath of Debian's `zookeeper` package.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::live::common::member::{MemberCommand, Ports};
use crate::live::launch::find_binary;

/// A member's ports: clients', quorum's, election's (slot 0 is the client port).
pub(crate) const PEER_PORTS: [bool; 3] = [false, true, true];

/// `java` and the classpath of Debian's `zookeeper` package.
pub(crate) fn runtime() -> Result<(PathBuf, String)> {
    let java = find_binary("java", "default-jre-headless")?;
    let dir = Path::new("/usr/share/java");
    let jar = dir.join("zookeeper.jar");
    if !jar.is_file() {
        bail!(
            "{} not found; install the Debian package `zookeeper` (apt-get install zookeeper)",
            jar.display()
        );
    }
    // Debian's /etc/zookeeper/conf/environment: the jar's manifest names its dependencies.
    let cp = ["/etc/zookeeper/conf".to_string(), jar.display().to_string()];
    Ok((java, cp.join(":")))
}

/// Each member's command, its data (`z<i>/`, with its `myid` and
/// `zoo.cfg`) under `dir`.
pub(crate) fn commands(dir: &Path, ports: &Ports) -> Result<Vec<MemberCommand>> {
    let (java, classpath) = runtime()?;
    let mut out = Vec::new();
    for i in 0..ports.real.len() {
        let data = dir.join(format!("z{i}"));
        fs::create_dir_all(&data)?;
        fs::write(data.join("myid"), format!("{}\n", i + 1))?;
        let cfg_path = data.join("zoo.cfg");
        fs::write(&cfg_path, config(&data, ports, i))?;
        let args = vec![
            "-Xmx128m".into(),
            "-XX:+UseSerialGC".into(),
            "-XX:TieredStopAtLevel=1".into(),
            // No /tmp/hsperfdata_<user>/<pid> file, which a SIGKILLed JVM leaves behind.
            "-XX:-UsePerfData".into(),
            // How long a member waits on a peer's election
            // connection (5 s by default): with the leader cut
            // off, the other two sat out such waits and elected
            // no one for 3 to more than 9.5 s.
            "-Dzookeeper.cnxTimeout=500".into(),
            "-Dzookeeper.log.dir=".to_string() + &data.display().to_string(),
            "-Dzookeeper.root.logger=INFO,CONSOLE".into(),
            "-cp".into(),
            classpath.clone(),
            "org.apache.zookeeper.server.quorum.QuorumPeerMain".into(),
            cfg_path.display().to_string(),
        ];
        out.push(MemberCommand {
            bin: java.clone(),
            args,
            log: dir.join(format!("z{i}.log")),
        });
    }
    Ok(out)
}

/// Member `i`'s `zoo.cfg`: its own line is where it listens, the others'
/// are their links.
fn config(data: &Path, ports: &Ports, i: usize) -> String {
    let mut cfg = format!(
        "tickTime=100\ninitLimit=20\nsyncLimit=10\ndataDir={}\nclientPort={}\n\
         clientPortAddress=127.0.0.1\nminSessionTimeout=200\nmaxSessionTimeout=20000\n\
         admin.enableServer=false\n4lw.commands.whitelist=srvr,stat,ruok\n\
         standaloneEnabled=false\nreconfigEnabled=false\n",
        data.display(),
        ports.real[i][0]
    );
    for j in 0..ports.real.len() {
        let p = if i == j {
            &ports.real[j]
        } else {
            &ports.linked[j]
        };
        cfg.push_str(&format!("server.{}=127.0.0.1:{}:{}\n", j + 1, p[1], p[2]));
    }
    cfg
}
