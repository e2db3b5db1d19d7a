//! Helpers shared by the end-to-end tests.

/// Serve `app` on a free loopback port (in the test's runtime) and return
/// the port.
pub async fn serve(app: axum::Router) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// Serve `site` (path → HTML page, None → 404) on a free loopback port and
/// return the port.
pub async fn serve_site(site: fn(&str) -> Option<String>) -> u16 {
    use axum::http::{header, StatusCode, Uri};
    use axum::response::IntoResponse;
    let app = axum::Router::new().fallback(move |uri: Uri| async move {
        match site(uri.path()) {
            Some(html) => ([(header::CONTENT_TYPE, "text/html")], html).into_response(),
            None => (StatusCode::NOT_FOUND, "").into_response(),
        }
    });
    serve(app).await
}

/// Crawl `http://127.0.0.1:PORT/` with the embedded defaults and
/// `overrides`; the crawl directory and its records.
pub async fn crawl_port(port: u16, overrides: &[String]) -> (tempfile::TempDir, Vec<simcrawl::crawllog::PageRecord>) {
    let dir = tempfile::tempdir().unwrap();
    let settings = simcrawl::Settings::from_layers(&[], overrides).unwrap();
    simcrawl::crawl::run(
        settings,
        simcrawl::crawl::CrawlOptions::new(dir.path(), vec![format!("http://127.0.0.1:{port}/")]),
        std::future::pending(),
    )
    .await
    .unwrap();
    let records = simcrawl::crawllog::read_log(&dir.path().join(simcrawl::model::CrawlDir::LOG_FILE)).unwrap();
    (dir, records)
}
