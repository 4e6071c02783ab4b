package clickhousetest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

// The config format is the ClickHouse 18.16 one (root element <yandex>), which
// newer servers still accept. Every path lives under the server's own
// directory so that parallel servers never share state with each other or with
// a system-wide install.
var configTmpl = template.Must(template.New("config.xml").Funcs(template.FuncMap{"x": xmlEscape}).Parse(`<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>{{x .LogDir}}/server.log</log>
        <errorlog>{{x .LogDir}}/server.err.log</errorlog>
        <size>50M</size>
        <count>1</count>
        <console>0</console>
    </logger>

    <!-- IPv4 loopback only: the host may have no IPv6, and tests must not be reachable from outside. -->
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>{{.TCPPort}}</tcp_port>
    <http_port>{{.HTTPPort}}</http_port>
{{- if .SecurePort}}
    <tcp_port_secure>{{.SecurePort}}</tcp_port_secure>
    <https_port>{{.HTTPSPort}}</https_port>
    <!-- The server section serves tcp_port_secure. No dhParamsFile: ECDHE
         needs none, and generating DH parameters takes minutes. No client
         certificates are asked for (verificationMode none). -->
    <openSSL>
        <server>
            <certificateFile>{{x .CertFile}}</certificateFile>
            <privateKeyFile>{{x .KeyFile}}</privateKeyFile>
            <verificationMode>none</verificationMode>
            <loadDefaultCAFile>false</loadDefaultCAFile>
            <cacheSessions>false</cacheSessions>
            <disableProtocols>sslv2,sslv3,tlsv1,tlsv1_1</disableProtocols>
            <preferServerCiphers>true</preferServerCiphers>
        </server>
    </openSSL>
{{- end}}
    <!-- No interserver_http_port: it only serves replication, which tests
         cannot use without ZooKeeper, and each listener adds ~250ms to shutdown. -->

    <max_connections>256</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>64</max_concurrent_queries>

    <!-- The defaults (8 GiB / 5 GiB) are sized for a dedicated host; several test servers share one. -->
    <uncompressed_cache_size>16777216</uncompressed_cache_size>
    <mark_cache_size>16777216</mark_cache_size>

    <path>{{x .DataDir}}/</path>
    <tmp_path>{{x .DataDir}}/tmp/</tmp_path>
    <user_files_path>{{x .DataDir}}/user_files/</user_files_path>
    <format_schema_path>{{x .DataDir}}/format_schemas/</format_schema_path>
    <users_config>{{x .Dir}}/users.xml</users_config>

    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <!-- Fixed so results do not depend on the host's zone. -->
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>

    <!-- Tests drop tables of any size. -->
    <max_table_size_to_drop>0</max_table_size_to_drop>
    <max_partition_size_to_drop>0</max_partition_size_to_drop>
</yandex>
`))

var usersTmpl = template.Must(template.New("users.xml").Funcs(template.FuncMap{"x": xmlEscape}).Parse(`<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>2000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <!-- Defaults are 16 threads each, far more than a test needs on a small machine. -->
            <background_pool_size>4</background_pool_size>
            <background_schedule_pool_size>4</background_schedule_pool_size>
            <poll_interval>1</poll_interval>
        </default>
    </profiles>

    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
                <host>localhost</host>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
{{- range .Users}}
        <{{.Name}}>
            <password>{{x .Password}}</password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </{{.Name}}>
{{- end}}
    </users>

    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
`))

type configParams struct {
	Dir, DataDir, LogDir string
	TCPPort, HTTPPort    int
	SecurePort           int // 0: no TLS
	HTTPSPort            int // with SecurePort
	CertFile, KeyFile    string
	Users                []User
}

// writeConfig (re)writes config.xml and users.xml into p.Dir.
func writeConfig(p configParams) error {
	for _, f := range []struct {
		tmpl *template.Template
		name string
	}{{configTmpl, "config.xml"}, {usersTmpl, "users.xml"}} {
		var buf bytes.Buffer
		if err := f.tmpl.Execute(&buf, p); err != nil {
			return fmt.Errorf("render %s: %w", f.name, err)
		}
		if err := os.WriteFile(filepath.Join(p.Dir, f.name), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	return nil
}

// xmlEscape is needed because t.TempDir names keep characters such as '&'
// from the test name.
func xmlEscape(s string) (string, error) {
	var buf bytes.Buffer
	if err := xml.EscapeText(&buf, []byte(s)); err != nil {
		return "", err
	}
	return buf.String(), nil
}
