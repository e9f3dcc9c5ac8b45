// .NET (Mono) client for the compatibility suite.
//
// Compiled by clients/mono/run-mono.mjs together with the four proxies Mono's `wsdl` tool
// generates from our WSDL (namespaces PSoap, PSoap12, PHttpGet, PHttpPost), then run as
//   mono client.exe <fixture.json>
// Prints `RESULT mono <soap11|soap12|httpget|httppost> <check> PASS|FAIL <detail>` per check.
using System;
using System.Collections.Generic;
using System.Data;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net;
using System.Reflection;
using System.Text;
using System.Web.Script.Serialization;
using System.Web.Services;
using System.Web.Services.Description;
using System.Web.Services.Protocols;
using System.Xml.Serialization;

/// <summary>What every protocol's proxy offers, in the SOAP proxies' types (ints as int).</summary>
interface IAuth
{
    string Protocol { get; }
    /// <summary>Query string added to every request's URL (the JSON operations read the request).</summary>
    string ExtraQuery { get; set; }
    string ValidateUser(string login, string password, int appId, string ipAddress);
    bool ValidateUserToken(string token);
    DataTable WhatsNew(string appToken, int appId, string appVersion, string language, int qtyNews);
    string ValidateUserJSON();
    string ValidateUserTokenJSON();
    string GetUserLoginURL(string token, int appId);
    /// <summary>Sends WhatsNew with AppID "abc"; the service rejects it.</summary>
    void SendBadRequest();
}

static class Urls
{
    public static Uri WithQuery(Uri uri, string query)
    {
        if (string.IsNullOrEmpty(query)) return uri;
        string text = uri.ToString();
        string sep = text.EndsWith("?") ? "" : (uri.Query.Length > 0 ? "&" : "?");
        return new Uri(text + sep + query);
    }
}

/// <summary>
/// Writes the SOAP message through to the proxy's own writer, except that the text of the
/// elements with the given local name is replaced. The generated SOAP proxies send an int for
/// AppID; to send a request our service rejects, the message is changed on its way out
/// (SoapHttpClientProtocol.GetWriterForMessage), and the reply goes through the proxy's normal
/// fault handling.
/// </summary>
class ReplacingXmlWriter : System.Xml.XmlWriter
{
    readonly System.Xml.XmlWriter inner;
    readonly string localName, replacement;
    readonly Stack<string> open = new Stack<string>();
    bool replaced;

    public ReplacingXmlWriter(System.Xml.XmlWriter inner, string localName, string replacement)
    {
        this.inner = inner;
        this.localName = localName;
        this.replacement = replacement;
    }

    bool InTarget { get { return open.Count > 0 && open.Peek() == localName; } }
    void WriteText(Action<string> write, string text)
    {
        if (!InTarget) { write(text); return; }
        if (!replaced) write(replacement);
        replaced = true;
    }

    public override System.Xml.WriteState WriteState { get { return inner.WriteState; } }
    public override void WriteStartDocument() { inner.WriteStartDocument(); }
    public override void WriteStartDocument(bool standalone) { inner.WriteStartDocument(standalone); }
    public override void WriteEndDocument() { inner.WriteEndDocument(); }
    public override void WriteDocType(string name, string pubid, string sysid, string subset) { inner.WriteDocType(name, pubid, sysid, subset); }
    public override void WriteStartElement(string prefix, string localName, string ns) { open.Push(localName); replaced = false; inner.WriteStartElement(prefix, localName, ns); }
    public override void WriteEndElement() { if (InTarget && !replaced) inner.WriteString(replacement); open.Pop(); inner.WriteEndElement(); }
    public override void WriteFullEndElement() { if (InTarget && !replaced) inner.WriteString(replacement); open.Pop(); inner.WriteFullEndElement(); }
    public override void WriteStartAttribute(string prefix, string localName, string ns) { open.Push("@" + localName); inner.WriteStartAttribute(prefix, localName, ns); }
    public override void WriteEndAttribute() { open.Pop(); inner.WriteEndAttribute(); }
    public override void WriteCData(string text) { inner.WriteCData(text); }
    public override void WriteComment(string text) { inner.WriteComment(text); }
    public override void WriteProcessingInstruction(string name, string text) { inner.WriteProcessingInstruction(name, text); }
    public override void WriteEntityRef(string name) { inner.WriteEntityRef(name); }
    public override void WriteCharEntity(char ch) { inner.WriteCharEntity(ch); }
    public override void WriteWhitespace(string ws) { inner.WriteWhitespace(ws); }
    public override void WriteString(string text) { WriteText(inner.WriteString, text); }
    public override void WriteSurrogateCharEntity(char lowChar, char highChar) { inner.WriteSurrogateCharEntity(lowChar, highChar); }
    public override void WriteChars(char[] buffer, int index, int count) { WriteText(inner.WriteString, new string(buffer, index, count)); }
    public override void WriteRaw(char[] buffer, int index, int count) { WriteText(inner.WriteRaw, new string(buffer, index, count)); }
    public override void WriteRaw(string data) { WriteText(inner.WriteRaw, data); }
    public override void WriteBase64(byte[] buffer, int index, int count) { inner.WriteBase64(buffer, index, count); }
    public override void Flush() { inner.Flush(); }
    public override void Close() { inner.Close(); }
    public override string LookupPrefix(string ns) { return inner.LookupPrefix(ns); }
}

// --- SOAP 1.1 and SOAP 1.2: the generated SoapHttpClientProtocol proxies ---

class Soap11Client : PSoap.Authentication, IAuth
{
    public string Protocol { get { return "soap11"; } }
    public string ExtraQuery { get; set; }
    protected override WebRequest GetWebRequest(Uri uri) { return base.GetWebRequest(Urls.WithQuery(uri, ExtraQuery)); }

    string IAuth.ValidateUser(string l, string p, int a, string ip) { return ValidateUser(l, p, a, ip); }
    bool IAuth.ValidateUserToken(string t) { return ValidateUserToken(t); }
    DataTable IAuth.WhatsNew(string t, int a, string v, string l, int q) { return WhatsNew(t, a, v, l, q); }
    string IAuth.ValidateUserJSON() { return ValidateUserJSON(); }
    string IAuth.ValidateUserTokenJSON() { return ValidateUserTokenJSON(); }
    string IAuth.GetUserLoginURL(string t, int a) { return GetUserLoginURL(t, a); }
    bool badAppId;
    protected override System.Xml.XmlWriter GetWriterForMessage(SoapClientMessage message, int bufferSize)
    {
        var writer = base.GetWriterForMessage(message, bufferSize);
        return badAppId ? new ReplacingXmlWriter(writer, "AppID", "abc") : writer;
    }
    void IAuth.SendBadRequest()
    {
        badAppId = true;
        try { WhatsNew("", 1, "", "", 1); }
        finally { badAppId = false; }
    }

}

class Soap12Client : PSoap12.Authentication, IAuth
{
    public string Protocol { get { return "soap12"; } }
    public string ExtraQuery { get; set; }
    protected override WebRequest GetWebRequest(Uri uri) { return base.GetWebRequest(Urls.WithQuery(uri, ExtraQuery)); }

    string IAuth.ValidateUser(string l, string p, int a, string ip) { return ValidateUser(l, p, a, ip); }
    bool IAuth.ValidateUserToken(string t) { return ValidateUserToken(t); }
    DataTable IAuth.WhatsNew(string t, int a, string v, string l, int q) { return WhatsNew(t, a, v, l, q); }
    string IAuth.ValidateUserJSON() { return ValidateUserJSON(); }
    string IAuth.ValidateUserTokenJSON() { return ValidateUserTokenJSON(); }
    string IAuth.GetUserLoginURL(string t, int a) { return GetUserLoginURL(t, a); }
    bool badAppId;
    protected override System.Xml.XmlWriter GetWriterForMessage(SoapClientMessage message, int bufferSize)
    {
        var writer = base.GetWriterForMessage(message, bufferSize);
        return badAppId ? new ReplacingXmlWriter(writer, "AppID", "abc") : writer;
    }
    void IAuth.SendBadRequest()
    {
        badAppId = true;
        try { WhatsNew("", 1, "", "", 1); }
        finally { badAppId = false; }
    }

}

// --- HTTP GET and HTTP POST: every parameter is a string there, so "abc" goes through the generated method ---

class HttpGetClient : PHttpGet.Authentication, IAuth
{
    public string Protocol { get { return "httpget"; } }
    public string ExtraQuery { get; set; }
    protected override WebRequest GetWebRequest(Uri uri) { return base.GetWebRequest(Urls.WithQuery(uri, ExtraQuery)); }

    static string S(int i) { return i.ToString(CultureInfo.InvariantCulture); }
    string IAuth.ValidateUser(string l, string p, int a, string ip) { return ValidateUser(l, p, S(a), ip); }
    bool IAuth.ValidateUserToken(string t) { return ValidateUserToken(t); }
    DataTable IAuth.WhatsNew(string t, int a, string v, string l, int q) { return WhatsNew(t, S(a), v, l, S(q)); }
    string IAuth.ValidateUserJSON() { return ValidateUserJSON(); }
    string IAuth.ValidateUserTokenJSON() { return ValidateUserTokenJSON(); }
    string IAuth.GetUserLoginURL(string t, int a) { return GetUserLoginURL(t, S(a)); }
    void IAuth.SendBadRequest() { WhatsNew("", "abc", "", "", "1"); }
}

class HttpPostClient : PHttpPost.Authentication, IAuth
{
    public string Protocol { get { return "httppost"; } }
    public string ExtraQuery { get; set; }
    protected override WebRequest GetWebRequest(Uri uri) { return base.GetWebRequest(Urls.WithQuery(uri, ExtraQuery)); }

    static string S(int i) { return i.ToString(CultureInfo.InvariantCulture); }
    string IAuth.ValidateUser(string l, string p, int a, string ip) { return ValidateUser(l, p, S(a), ip); }
    bool IAuth.ValidateUserToken(string t) { return ValidateUserToken(t); }
    DataTable IAuth.WhatsNew(string t, int a, string v, string l, int q) { return WhatsNew(t, S(a), v, l, S(q)); }
    string IAuth.ValidateUserJSON() { return ValidateUserJSON(); }
    string IAuth.ValidateUserTokenJSON() { return ValidateUserTokenJSON(); }
    string IAuth.GetUserLoginURL(string t, int a) { return GetUserLoginURL(t, S(a)); }
    void IAuth.SendBadRequest() { WhatsNew("", "abc", "", "", "1"); }
}

class CheckFailed : Exception
{
    public CheckFailed(string message) : base(message) { }
}

static class Program
{
    // "mono", or the fixture's clientName (the run against a non-default compatibility profile).
    static string Client = "mono";
    static readonly string[] CheckNames = { "wsdl", "login-ok", "login-bad", "token-ok", "token-bad", "whatsnew", "login-url", "json-user", "json-token", "fault" };
    static Dictionary<string, object> fx;
    static readonly JavaScriptSerializer Json = new JavaScriptSerializer();

    static string Str(string key) { return (string)fx[key]; }
    static int Int(string key) { return Convert.ToInt32(fx[key], CultureInfo.InvariantCulture); }

    static void Report(string protocol, string check, bool ok, string detail)
    {
        string text = string.Join(" ", (detail ?? "").Split(new[] { ' ', '\n', '\r', '\t' }, StringSplitOptions.RemoveEmptyEntries));
        if (text.Length > 300) text = text.Substring(0, 300);
        Console.WriteLine("RESULT {0} {1} {2} {3} {4}", Client, protocol, check, ok ? "PASS" : "FAIL", text);
    }

    /// <summary>Runs one check: it returns a detail, or throws (CheckFailed or any exception) to fail.</summary>
    static void Check(string protocol, string name, Func<string> fn)
    {
        try
        {
            Report(protocol, name, true, fn());
        }
        catch (CheckFailed e)
        {
            Report(protocol, name, false, e.Message);
        }
        catch (Exception e)
        {
            Report(protocol, name, false, Describe(e));
        }
    }

    /// <summary>An exception and its inner exceptions, for the report.</summary>
    static string Describe(Exception e)
    {
        var parts = new List<string>();
        for (var x = e; x != null; x = x.InnerException) parts.Add(x.GetType().FullName + ": " + x.Message);
        return string.Join(" ---> ", parts);
    }

    static void Require(bool condition, string detail)
    {
        if (!condition) throw new CheckFailed(detail);
    }

    static string Q(string s) { return s == null ? "null" : "\"" + s + "\""; }

    static Dictionary<string, object> ParseJson(string text)
    {
        var value = Json.DeserializeObject(text) as Dictionary<string, object>;
        if (value == null) throw new CheckFailed("not a JSON object: " + text);
        return value;
    }

    static string QueryString(params string[] pairs)
    {
        var sb = new StringBuilder();
        for (int i = 0; i < pairs.Length; i += 2)
        {
            if (sb.Length > 0) sb.Append('&');
            sb.Append(Uri.EscapeDataString(pairs[i])).Append('=').Append(Uri.EscapeDataString(pairs[i + 1]));
        }
        return sb.ToString();
    }

    static string CompareNews(DataTable table)
    {
        Require(table != null, "WhatsNew returned null");
        string tableName = fx.ContainsKey("tableName") ? Str("tableName") : "News";
        Require(table.TableName == tableName, "table name " + Q(table.TableName) + " != " + Q(tableName));
        // [column name, type]: the default table, or the renamed columns of a compatibility profile
        // (Titulo, Destaque as a Boolean...), with columnFields naming each one's key in the news items.
        var expectedColumns = ((object[])fx["columns"]).Select(c => (object[])c).ToArray();
        var fields = fx.ContainsKey("columnFields") ? ((Dictionary<string, object>)fx["columnFields"]).ToDictionary(kv => kv.Key, kv => (string)kv.Value)
            : new Dictionary<string, string> { { "NewsID", "newsId" }, { "AppID", "appId" }, { "Title", "title" }, { "Body", "body" }, { "Language", "language" }, { "Url", "url" }, { "PublishedAt", "publishedAt" } };
        var typeOf = new Dictionary<string, Type> { { "int", typeof(int) }, { "string", typeof(string) }, { "dateTime", typeof(DateTime) }, { "boolean", typeof(bool) } };
        string got = string.Join(",", table.Columns.Cast<DataColumn>().Select(c => c.ColumnName + ":" + c.DataType.Name));
        string want = string.Join(",", expectedColumns.Select(c => (string)c[0] + ":" + typeOf[(string)c[1]].Name));
        Require(got == want, "columns " + got + " != " + want);
        var news = ((object[])fx["news"]).Cast<Dictionary<string, object>>().ToArray();
        Require(table.Rows.Count == news.Length, table.Rows.Count + " rows, expected " + news.Length);
        for (int i = 0; i < news.Length; i++)
        {
            DataRow row = table.Rows[i];
            var w = news[i];
            foreach (var column in expectedColumns)
            {
                string name = (string)column[0], type = (string)column[1], key = fields[name];
                object wanted = w.ContainsKey(key) ? w[key] : null;
                object actual = row[name];
                if (type == "dateTime")
                {
                    DateTime wantTime = DateTime.Parse((string)wanted, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal);
                    Require(actual is DateTime, "row " + i + " " + name + " is " + actual.GetType().Name);
                    DateTime utc = ((DateTime)actual).ToUniversalTime();
                    Require(utc == wantTime, "row " + i + " " + name + " " + ((DateTime)actual).ToString("o") + " (UTC " + utc.ToString("o") + ") != " + wantTime.ToString("o"));
                    continue;
                }
                if (wanted == null)
                {
                    Require(actual == DBNull.Value, "row " + i + " " + name + " " + Q(actual.ToString()) + " != DBNull");
                    continue;
                }
                object value = type == "int" ? Convert.ToInt32(wanted, CultureInfo.InvariantCulture) : type == "boolean" ? (object)Convert.ToBoolean(wanted, CultureInfo.InvariantCulture) : wanted;
                Require(actual != DBNull.Value && actual.Equals(value), "row " + i + " " + name + " " + (actual == DBNull.Value ? "DBNull" : Q(actual.ToString())) + " != " + Q(value.ToString()));
            }
        }
        string idColumn = (string)expectedColumns[0][0];
        string dateColumn = (string)expectedColumns.First(c => (string)c[1] == "dateTime")[0];
        var first = (DateTime)table.Rows[0][dateColumn];
        return string.Format("DataTable {0}: {1} rows; {2}=[{3}]; {4}[0]={5} ({6})", table.TableName, table.Rows.Count, idColumn,
            string.Join(",", table.Rows.Cast<DataRow>().Select(r => r[idColumn].ToString())), dateColumn, first.ToString("o"), first.Kind);
    }

    static string ResponseBody(WebException e)
    {
        if (e.Response == null) return "";
        try
        {
            using (var reader = new StreamReader(e.Response.GetResponseStream(), Encoding.UTF8)) return reader.ReadToEnd();
        }
        catch (Exception)
        {
            return "";
        }
    }

    static void RunProtocol(string protocol, Func<IAuth> create)
    {
        IAuth client = null;
        Check(protocol, "wsdl", () =>
        {
            client = create();
            ((WebClientProtocol)client).Url = Str("endpoint");
            ((WebClientProtocol)client).Timeout = 30000;
            var methods = client.GetType().BaseType.GetMethods(BindingFlags.Public | BindingFlags.Instance | BindingFlags.DeclaredOnly)
                .Where(m => m.GetCustomAttributes(false).Any(a => a is SoapDocumentMethodAttribute || a is HttpMethodAttribute))
                .Select(m => m.Name).ToArray();
            Require(methods.Length == 6, "proxy methods: " + string.Join(",", methods));
            return client.GetType().BaseType.FullName + " : " + client.GetType().BaseType.BaseType.Name + " (" + string.Join(",", methods) + ")";
        });
        if (client == null)
        {
            foreach (var name in CheckNames.Skip(1)) Report(protocol, name, false, "no proxy");
            return;
        }
        string login = Str("login"), password = Str("password"), badPassword = Str("badPassword"), loginUrl = Str("loginUrl");
        int appId = Int("appId");
        string token = null, jsonToken = null;

        Check(protocol, "login-ok", () =>
        {
            token = client.ValidateUser(login, password, appId, "");
            Require(token != null && token.Length >= 16, "token " + Q(token));
            return "token " + Q(token);
        });
        Check(protocol, "login-bad", () =>
        {
            string r = client.ValidateUser(login, badPassword, appId, "");
            Require(string.IsNullOrEmpty(r), "result " + Q(r));
            return "result " + Q(r);
        });
        Check(protocol, "token-ok", () =>
        {
            bool r = client.ValidateUserToken(token);
            Require(r, "result " + r);
            return "result " + r;
        });
        Check(protocol, "token-bad", () =>
        {
            bool r = client.ValidateUserToken("not-a-token-0000");
            Require(!r, "result " + r);
            return "result " + r;
        });
        Check(protocol, "whatsnew", () =>
        {
            string detail = CompareNews(client.WhatsNew("", appId, "", "en", Int("qtyNews")));
            // An empty table (qtyNews = 0): schema, empty diffgram.
            DataTable empty = client.WhatsNew("", appId, "", "en", 0);
            string dateColumn = (string)((object[])fx["columns"]).Select(c => (object[])c).First(c => (string)c[1] == "dateTime")[0];
            Require(empty != null && empty.Rows.Count == 0 && empty.Columns.Count == ((object[])fx["columns"]).Length && empty.Columns[dateColumn].DataType == typeof(DateTime),
                "qtyNews=0: " + (empty == null ? "null" : empty.Rows.Count + " rows, " + empty.Columns.Count + " columns"));
            return detail + "; qtyNews=0: 0 rows, " + empty.Columns.Count + " typed columns";
        });
        Check(protocol, "login-url", () =>
        {
            string url = client.GetUserLoginURL(token, appId);
            Require(url != null && (url.StartsWith(loginUrl + "&ticket=", StringComparison.Ordinal) || url.StartsWith(loginUrl + "?ticket=", StringComparison.Ordinal)), "url " + Q(url));
            string ticket = Uri.UnescapeDataString(url.Substring(url.IndexOf("ticket=", StringComparison.Ordinal) + 7).Split('&')[0]);
            bool first = client.ValidateUserToken(ticket);
            bool second = client.ValidateUserToken(ticket);
            Require(first && !second, url + " -> first " + first + ", second " + second);
            return url + " -> first " + first + ", second " + second;
        });
        // The JSON operations declare no parameters; they read them from the request, here from
        // the query string added to the request URL (GetWebRequest override).
        Check(protocol, "json-user", () =>
        {
            client.ExtraQuery = QueryString("login", login, "password", password, "AppId", appId.ToString(CultureInfo.InvariantCulture));
            string text;
            try { text = client.ValidateUserJSON(); }
            finally { client.ExtraQuery = null; }
            var json = ParseJson(text);
            jsonToken = json.ContainsKey("token") ? json["token"] as string : null;
            bool valid = client.ValidateUserToken(jsonToken);
            Require(true.Equals(json["success"]) && valid, text + "; token valid=" + valid);
            return text + "; token valid=" + valid;
        });
        Check(protocol, "json-token", () =>
        {
            string good, bad;
            try
            {
                client.ExtraQuery = QueryString("token", jsonToken ?? token ?? "");
                good = client.ValidateUserTokenJSON();
                client.ExtraQuery = "token=garbage";
                bad = client.ValidateUserTokenJSON();
            }
            finally { client.ExtraQuery = null; }
            var g = ParseJson(good);
            var b = ParseJson(bad);
            Require(true.Equals(g["valid"]) && false.Equals(b["valid"]), good + " / " + bad);
            return good + " / " + bad;
        });
        Check(protocol, "fault", () =>
        {
            bool soap = protocol.StartsWith("soap", StringComparison.Ordinal);
            try
            {
                client.SendBadRequest();
                throw new CheckFailed("no exception");
            }
            catch (SoapException e)
            {
                Require(soap, "SoapException on " + protocol + ": " + e.Message);
                string expectedCode = protocol == "soap12" ? "Sender" : "Client";
                string detail = "SoapException code=" + e.Code + (e.SubCode != null ? " subcode=" + e.SubCode.Code : "") + " message=" + e.Message;
                Require(e.Message.Contains(Str("soapFaultText")) && e.Code.Name == expectedCode, detail);
                return detail;
            }
            catch (WebException e)
            {
                string body = ResponseBody(e);
                var status = e.Response is HttpWebResponse ? (int)((HttpWebResponse)e.Response).StatusCode : 0;
                string detail = "WebException status=" + e.Status + " http=" + status + " message=" + e.Message + (body.Length > 0 ? " body=" + body : "");
                Require(!soap, detail);
                Require(e.Status == WebExceptionStatus.ProtocolError && status == 500 && (e.Message + body).Contains(Str("httpErrorText")), detail);
                return detail;
            }
        });
    }

    static int Main(string[] args)
    {
        Console.OutputEncoding = new UTF8Encoding(false);
        fx = (Dictionary<string, object>)Json.DeserializeObject(File.ReadAllText(args[0], Encoding.UTF8));
        if (fx.ContainsKey("clientName")) Client = Str("clientName");
        var monoRuntime = Type.GetType("Mono.Runtime");
        string monoVersion = monoRuntime == null ? Environment.Version.ToString()
            : (string)monoRuntime.GetMethod("GetDisplayName", BindingFlags.NonPublic | BindingFlags.Static).Invoke(null, null);
        Console.WriteLine("VERSION {0} Mono {1}; System.Web.Services {2}; TZ {3}", Client, monoVersion,
            typeof(SoapHttpClientProtocol).Assembly.GetName().Version, TimeZoneInfo.Local.Id);

        var only = args.Length > 1 ? new HashSet<string>(args[1].Split(',')) : null;
        var protocols = new List<KeyValuePair<string, Func<IAuth>>> {
            new KeyValuePair<string, Func<IAuth>>("soap11", () => new Soap11Client()),
            new KeyValuePair<string, Func<IAuth>>("soap12", () => new Soap12Client()),
            new KeyValuePair<string, Func<IAuth>>("httpget", () => new HttpGetClient()),
            new KeyValuePair<string, Func<IAuth>>("httppost", () => new HttpPostClient()),
        };
        foreach (var p in protocols)
        {
            if (only == null || only.Contains(p.Key)) RunProtocol(p.Key, p.Value);
        }
        return 0;
    }
}
