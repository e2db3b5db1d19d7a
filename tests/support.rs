//! Helpers shared by the end-to-end tests.

/// Serve `app` on a free loopback port (in the test's runtime) and return
/// the port.
pub async fn serve(app: axum::Router) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}
